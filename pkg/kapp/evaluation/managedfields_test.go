package evaluation_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestRunManagedFields: a live run of an update that removes a version
// lists the stored objects once and reports those whose managedFields name
// it; an update that removes no version lists nothing for it.
func TestRunManagedFields(t *testing.T) {
	twoVersions := func() *apiextv1.CustomResourceDefinition {
		crd := testcrd.MustCRD(t, testcrd.OldCRD)
		alpha := *crd.Spec.Versions[0].DeepCopy()
		alpha.Name, alpha.Storage = "v1alpha1", false
		crd.Spec.Versions = append([]apiextv1.CustomResourceDefinitionVersion{alpha}, crd.Spec.Versions...)
		crd.Status.StoredVersions = []string{"v1"}
		return crd
	}
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default", "managedFields": []any{
			map[string]any{"manager": "flux", "operation": "Apply", "apiVersion": "example.com/v1alpha1"}}},
		"spec": map[string]any{"size": int64(7)}}
	run := func(old, new *apiextv1.CustomResourceDefinition) (*evaluationtest.Cluster, []string) {
		cluster := &evaluationtest.Cluster{Objs: []map[string]any{obj}}
		cfg := config.Default()
		res, err := evaluation.Run(context.Background(), evaluation.Request{
			Plan: evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: new}}}, Settings: &cfg,
			Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
		require.NoError(t, err)
		var lines []string
		for _, f := range res.Findings {
			if f.Check == config.CheckManagedFields {
				lines = append(lines, report.FindingLine(f))
			}
		}
		return cluster, lines
	}

	cluster, lines := run(twoVersions(), testcrd.MustCRD(t, testcrd.OldCRD))
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], `version "v1alpha1" removed while managedFields of stored objects name it (managers flux)`)
	require.Contains(t, lines[0], "1 of 1 stored Widget has managedFields entries at it: default/w1 (managers flux)")
	require.Equal(t, []string{"widgets.example.com v1"}, cluster.Lists, "one list, at the storage version the live CRD serves")

	cluster, lines = run(testcrd.MustCRD(t, testcrd.OldCRD), testcrd.MustCRD(t, testcrd.SafeCRD))
	require.Empty(t, lines)
	require.Equal(t, []string{"widgets.example.com v1"}, cluster.Lists, "only the read of the changed schema")
}

// TestRunOwnerReferences: an update that removes a version reads the
// ownerReferences of objects of every kind once, for the removed versions,
// and reports the dependents the garbage collector can no longer resolve
// their owner for, and the resources it could not read; an update that
// removes no version reads nothing.
func TestRunOwnerReferences(t *testing.T) {
	twoVersions := testcrd.MustCRD(t, testcrd.OldCRD)
	alpha := *twoVersions.Spec.Versions[0].DeepCopy()
	alpha.Name, alpha.Storage = "v1alpha1", false
	twoVersions.Spec.Versions = append([]apiextv1.CustomResourceDefinitionVersion{alpha}, twoVersions.Spec.Versions...)
	twoVersions.Status.StoredVersions = []string{"v1"}

	dep := func(resource, name, owner string) evaluationtest.Dependent {
		d := evaluationtest.Dependent{OwnerKind: "Widget"}
		d.Resource, d.Name, d.OwnerAPIVersion = resource, name, owner
		return d
	}
	cluster := &evaluationtest.Cluster{DependentsRead: 120, DependentsSkipped: []kube.Skipped{
		{Group: "metrics.k8s.io", Resource: "pods", Err: errors.New("the server is currently unable to handle the request")},
		{Resource: "secrets", Forbidden: true, Err: errors.New("unknown")}},
		Dependents: []evaluationtest.Dependent{
			dep("configmaps", "default/w1-config", "example.com/v1alpha1"),
			dep("deployments.apps", "default/w1", "example.com/v1alpha1"),
			dep("configmaps", "default/w2-config", "example.com/v1"),
		}}
	cfg := config.Default()
	ownerFindings := func(cfg *config.Settings) []string {
		t.Helper()
		res, err := evaluation.Run(context.Background(), evaluation.Request{
			Plan:     evaluation.Plan{Pairs: []evaluation.Pair{{Old: twoVersions, New: testcrd.MustCRD(t, testcrd.OldCRD)}}},
			Settings: cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
		require.NoError(t, err)
		var lines []string
		for _, f := range res.Findings {
			if f.Check == config.CheckOwnerReferences {
				lines = append(lines, string(f.Severity)+" "+report.Message(f)+" | "+report.RemedyText(f))
			}
		}
		return lines
	}
	dependents := `error version "v1alpha1" removed while ownerReferences of other objects name it (configmaps, deployments.apps): ` +
		`the garbage collector can no longer resolve their owner, so they are no longer deleted with it: ` +
		`2 of 120 objects read have ownerReferences to it: configmaps default/w1-config (example.com/v1alpha1), deployments.apps default/w1 (example.com/v1alpha1) | ` +
		`keep "v1alpha1" until the ownerReferences of the dependents (configmaps default/w1-config, deployments.apps default/w1) name a version the CRD keeps ` +
		`(their controllers rewrite them, or patch their apiVersion), then remove it`
	// Secrets could not be read (the webhook's least-privilege role), nor
	// an aggregated API that is down: the dependents there are unknown,
	// which failMode closed (the default) makes an error, with the remedy
	// that grants the read.
	unreadable := `the ownerReferences of 2 resources could not be read, so dependents of the removed version there are unknown (failMode %s): ` +
		`pods.metrics.k8s.io: the server is currently unable to handle the request; secrets: forbidden | ` +
		`let the check list the 1 resource it may not (secrets), then try again: for the webhook, '` + finding.DependentsRBACCommand + `' ` +
		`(list on every resource); for a deploy or the tools command, an identity that may list them; or keep the removed versions`
	require.Equal(t, []string{"error " + fmt.Sprintf(unreadable, "closed"), dependents}, ownerFindings(&cfg))
	// Under failMode open: a warning.
	open := config.Default()
	open.FailMode = config.FailModeOpen
	require.Equal(t, []string{"warning " + fmt.Sprintf(unreadable, "open"), dependents}, ownerFindings(&open))
	// With the timing printed (KAPP_CRD_UPGRADE_SAFETY_TIMING), the
	// decorated cluster still lists dependents.
	var timing bytes.Buffer
	undo := evaluation.SetTimingOut(&timing)
	require.Equal(t, []string{"error " + fmt.Sprintf(unreadable, "closed"), dependents}, ownerFindings(&cfg))
	undo()
	require.Contains(t, timing.String(), "CRDUpgradeSafety timing: evaluate")
	require.Equal(t, []string{"example.com/v1alpha1 Widget", "example.com/v1alpha1 Widget", "example.com/v1alpha1 Widget"}, cluster.DependentsAsked)

	// checks.crd.ownerReferences.enabled false: nothing is read.
	off := config.Default()
	off.Checks.CRD.OwnerReferences.Enabled = false
	cluster = &evaluationtest.Cluster{Dependents: []evaluationtest.Dependent{dep("configmaps", "default/w1-config", "example.com/v1alpha1")}}
	res, err := evaluation.Run(context.Background(), evaluation.Request{
		Plan:     evaluation.Plan{Pairs: []evaluation.Pair{{Old: twoVersions, New: testcrd.MustCRD(t, testcrd.OldCRD)}}},
		Settings: &off, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
	require.NoError(t, err)
	for _, f := range res.Findings {
		require.NotEqual(t, config.CheckOwnerReferences, f.Check)
	}
	require.Empty(t, cluster.DependentsAsked, "disabled: nothing read")

	cluster = &evaluationtest.Cluster{}
	_, err = evaluation.Run(context.Background(), evaluation.Request{
		Plan:     evaluation.Plan{Pairs: []evaluation.Pair{{Old: testcrd.MustCRD(t, testcrd.OldCRD), New: testcrd.MustCRD(t, testcrd.SafeCRD)}}},
		Settings: &cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
	require.NoError(t, err)
	require.Empty(t, cluster.DependentsAsked, "no version removed: nothing read")
}
