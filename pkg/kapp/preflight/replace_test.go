package preflight

import (
	"context"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// withAnnotation sets an annotation on a manifest's resource (none when
// value is empty).
func withAnnotation(t *testing.T, yaml, key, value string) ctlres.Resource {
	t.Helper()
	r := res(t, yaml)
	if value != "" {
		r.UnstructuredObject()["metadata"].(map[string]any)["annotations"] = map[string]any{key: value}
	}
	return r
}

// TestRunUpdateStrategies: the check sees the update strategy kapp will use
// for each CRD update (the annotation, else --apply-default-update-strategy)
// through kapp's own cluster changes, and treats a replace, or a
// fallback-on-replace the apiserver makes happen, like a deletion.
func TestRunUpdateStrategies(t *testing.T) {
	const crd = "widgets.example.com"
	kindChanged := strings.Replace(safeCRD, "kind: Widget,", "kind: Gizmo,", 1)
	const lostAll = "update strategy always-replace: kapp would delete and recreate the CRD, deleting its 3 existing custom resources"

	cases := []struct {
		name            string
		newCRD          string // default safeCRD
		strategy        string // the annotation on the new CRD
		defaultStrategy string // --apply-default-update-strategy
		crsDeleted      int    // custom resources the same change set deletes
		count           int    // custom resources on the cluster
		dryRunErr       map[string]error
		config          map[string]any

		errContains  string   // Run fails without findings
		errors       []string // rendered error findings (substrings, in order)
		warnings     []string // printed warning lines (substrings, in order)
		dryRuns      []string // "verb name", sorted
		counted      bool     // the custom resources were counted
		noContact    bool     // the cluster was not contacted
		deleteTarget bool     // the dry run of the delete names the live CRD's uid
	}{
		{name: "always-replace annotation", strategy: "always-replace", count: 3,
			errors:  []string{"crd " + crd + ": [crdDeletion] data loss: " + lostAll},
			dryRuns: []string{"delete " + crd}, counted: true, deleteTarget: true},
		{name: "always-replace as --apply-default-update-strategy", defaultStrategy: "always-replace", count: 3,
			errors:  []string{"crd " + crd + ": [crdDeletion] data loss: " + lostAll},
			dryRuns: []string{"delete " + crd}, counted: true},
		{name: "the annotation wins over the default", defaultStrategy: "always-replace", strategy: "fallback-on-replace", count: 3,
			dryRuns: []string{"update " + crd}},
		{name: "always-replace without custom resources: nothing is lost", strategy: "always-replace", count: 0,
			dryRuns: []string{"delete " + crd}, counted: true},
		{name: "always-replace: custom resources the change set deletes are not counted", strategy: "always-replace",
			count: 3, crsDeleted: 2,
			errors:  []string{"deleting its 1 existing custom resource"},
			dryRuns: []string{"delete " + crd}, counted: true},
		{name: "always-replace: all custom resources deleted by the change set", strategy: "always-replace",
			count: 2, crsDeleted: 2, dryRuns: []string{"delete " + crd}, counted: true},
		{name: "always-replace whose delete a policy refuses: nothing is lost", strategy: "always-replace", count: 3,
			dryRunErr: map[string]error{"delete " + crd: evaluationtest.WebhookDenial()},
			errors:    []string{"[apiserverRejects] the apiserver refuses the delete (server-side dry run): admission webhook"},
			dryRuns:   []string{"delete " + crd}},
		{name: "always-replace in warn mode", strategy: "always-replace", count: 3, config: map[string]any{"mode": "warn"},
			warnings: []string{"Warning: CRDUpgradeSafety: crd " + crd + ": [crdDeletion] data loss: " + lostAll},
			dryRuns:  []string{"delete " + crd}, counted: true},
		{name: "always-replace with crdDeletion off", strategy: "always-replace", count: 3,
			config:  map[string]any{"checks": map[string]any{"crd": map[string]any{"crdDeletion": map[string]any{"enabled": false}}}},
			dryRuns: []string{"delete " + crd}},
		{name: "fallback-on-replace, update refused by validation (names.kind)", newCRD: kindChanged,
			strategy: "fallback-on-replace", count: 3,
			errors: []string{"crd " + crd + `: [crdDeletion] data loss: update strategy fallback-on-replace, and the apiserver refuses the update ` +
				`(spec.names.kind: Invalid value: "Gizmo": field is immutable): kapp would delete and recreate the CRD, deleting its 3 existing custom resources`},
			counted: true},
		{name: "fallback-on-replace, update refused, no custom resources", newCRD: kindChanged,
			strategy: "fallback-on-replace", count: 0, counted: true},
		{name: "fallback-on-replace, update accepted: the fallback cannot trigger", strategy: "fallback-on-replace", count: 3,
			dryRuns: []string{"update " + crd}},
		{name: "fallback-on-replace, a policy refuses the update as invalid", strategy: "fallback-on-replace", count: 3,
			dryRunErr: map[string]error{"update " + crd: evaluationtest.PolicyDenial(crd)},
			errors: []string{"[crdDeletion] data loss: update strategy fallback-on-replace, and the apiserver refuses the update (server-side dry run: " +
				"customresourcedefinitions.apiextensions.k8s.io \"" + crd + "\" is forbidden: ValidatingAdmissionPolicy 'freeze'"},
			dryRuns: []string{"update " + crd}, counted: true},
		{name: "fallback-on-replace, a webhook forbids the update: kapp does not fall back", strategy: "fallback-on-replace", count: 3,
			dryRunErr: map[string]error{"update " + crd: evaluationtest.WebhookDenial()},
			errors:    []string{"[apiserverRejects] the apiserver refuses the update (server-side dry run): admission webhook \"crds.example.com\" denied the request: not today"},
			dryRuns:   []string{"update " + crd}},
		{name: "fallback-on-replace with apiserverRejects off still dry-runs to decide", strategy: "fallback-on-replace", count: 3,
			dryRunErr: map[string]error{"update " + crd: evaluationtest.PolicyDenial(crd)},
			config:    map[string]any{"checks": map[string]any{"crd": map[string]any{"apiserverRejects": map[string]any{"enabled": false}}}},
			errors:    []string{"[crdDeletion] data loss: update strategy fallback-on-replace, and the apiserver refuses the update (server-side dry run"},
			dryRuns:   []string{"update " + crd}, counted: true},
		{name: "plain update refused by the apiserver's validation: an error before anything is applied", newCRD: kindChanged, count: 3,
			errors:  []string{`crd ` + crd + ` field spec.names.kind: [apiserverRejects] the apiserver refuses the update (server-side dry run): Invalid value: "Gizmo": field is immutable`},
			dryRuns: []string{"update " + crd}},
		{name: "skip: kapp leaves the CRD alone", strategy: "skip", newCRD: unsafeCRD, count: 3, noContact: true},
		{name: "unknown strategy: kapp's error, before anything is applied", strategy: "sometimes", count: 3,
			errContains: "CRD " + crd + ": Unknown update strategy: sometimes", noContact: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			newYAML := tc.newCRD
			if newYAML == "" {
				newYAML = safeCRD
			}
			existing := []ctlres.Resource{live(t, oldCRD)}
			for i := 0; i < tc.crsDeleted; i++ {
				existing = append(existing, live(t, widgetCR(string(rune('a'+i)))))
			}
			newRs := []ctlres.Resource{withAnnotation(t, newYAML, evaluation.UpdateStrategyAnnotation, tc.strategy)}

			old, err := CRDFromResource(live(t, oldCRD))
			require.NoError(t, err)
			cluster := &evaluationtest.Cluster{Count: tc.count, DryRunErr: tc.dryRunErr, Validates: true,
				CRDs: map[string]*apiextv1.CustomResourceDefinition{crd: old}}
			check, out := newCheck(t, cluster, tc.config)
			err = check.Run(context.Background(), deployGraph(t, tc.defaultStrategy, existing, newRs))

			if tc.errContains != "" {
				require.ErrorContains(t, err, tc.errContains)
				require.NotErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
			} else if len(tc.errors) == 0 {
				require.NoError(t, err)
			} else {
				var unsafe *report.DeployError
				require.ErrorAs(t, err, &unsafe)
				require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
				require.Len(t, unsafe.Lines(), len(tc.errors), "error findings: %q", unsafe.Lines())
				for i, want := range tc.errors {
					require.Contains(t, unsafe.Lines()[i], want)
				}
			}
			lines := nonEmptyLines(out.String())
			require.Len(t, lines, len(tc.warnings), "printed: %q", lines)
			for i, want := range tc.warnings {
				require.Contains(t, lines[i], want)
			}

			if tc.noContact {
				require.Zero(t, cluster.Contacts)
				return
			}
			wantDryRuns := tc.dryRuns
			if wantDryRuns == nil {
				wantDryRuns = []string{}
			}
			require.Equal(t, wantDryRuns, cluster.DryRunVerbs())
			if tc.counted {
				require.Equal(t, []string{crd}, cluster.Counts)
				require.Empty(t, cluster.Lists, "a replaced CRD's custom resources are not validated: they are deleted")
			} else {
				require.Empty(t, cluster.Counts)
			}
			if tc.deleteTarget {
				require.Equal(t, "uid-"+crd, string(cluster.DryRuns[0].Obj.GetUID()))
			}
		})
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
