package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
)

// The fingerprints of the two error findings of the update of
// testcrd.OldCRD to testcrd.UnsafeCRD (TestReviewUpdate).
const (
	enumFP    = "ed63ac23ebcd"
	minimumFP = "c25b6326ccb9"
)

// TestDenialCarriesFindings: the webhook's denial carries its error
// findings as data, one config.FindingCause cause each (its facts:
// fingerprint, check, version, field; its line without the fingerprint,
// which the facts carry), besides the words of its message; warnings
// carry none.
func TestDenialCarriesFindings(t *testing.T) {
	r, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: []map[string]any{invalidWidget}})
	resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.False(t, resp.Allowed)
	d := resp.Result.Details
	require.NotNil(t, d)
	require.Equal(t, "widgets.example.com", d.Name)
	require.Equal(t, "apiextensions.k8s.io", d.Group)
	require.Equal(t, "customresourcedefinitions", d.Kind)
	require.Len(t, d.Causes, 2)
	for i, want := range []config.FindingFacts{
		{Fingerprint: enumFP, Check: config.CheckEnum, Version: "v1", Field: "^.spec.color"},
		{Fingerprint: minimumFP, Check: config.CheckMinimum, Version: "v1", Field: "^.spec.size"},
	} {
		c := d.Causes[i]
		require.Equal(t, metav1.CauseType(config.FindingCause), c.Type)
		require.Equal(t, want, config.ParseFindingFacts(c.Field))
		require.True(t, strings.HasPrefix(c.Message, "crd widgets.example.com version v1 field "+want.Field+": ["+want.Check+"] "), c.Message)
		require.NotContains(t, c.Message, "[fp:", "the fingerprint is in the facts")
	}

	r, _ = reviewer(t, map[string]any{"mode": "warn"}, &evaluationtest.Cluster{})
	resp = r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.True(t, resp.Allowed)
	require.Nil(t, resp.Result, "no denial, no causes")
}

// TestOwnDenialSaidOnce: when this webhook is installed, it denies the
// server-side dry run of the kapp hook's update. The apiserver turns its
// response into the dry run's error (webhookerrors.ToStatusErr, the
// apiserver's own: the message prefixed, the details kept), and the
// evaluation recognises the denial by its causes: the findings the hook
// has itself are said once; an apiserverRejects finding names, as the
// webhook's denial, only those it does not report as errors. A denial
// without our causes is refused as before.
func TestOwnDenialSaidOnce(t *testing.T) {
	const crd = "widgets.example.com"
	old, unsafe := testcrd.MustCRD(t, testcrd.OldCRD), testcrd.MustCRD(t, testcrd.UnsafeCRD)
	review, _ := reviewer(t, nil, &evaluationtest.Cluster{Objs: []map[string]any{invalidWidget}})
	denial := review.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD))
	require.False(t, denial.Allowed)
	ours := func() error {
		return webhookerrors.ToStatusErr("crd-upgrade-safety.kapp.k14s.io", denial.Result.DeepCopy())
	}

	// deploy runs the kapp hook's evaluation of the update with the
	// settings raw, its dry run answered with dryRunErr; it returns the
	// findings, the objects listed and the deploy's error.
	deploy := func(t *testing.T, raw map[string]any, dryRunErr error) ([]finding.Finding, []string, error) {
		t.Helper()
		cfg, err := config.Decode(raw)
		require.NoError(t, err)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(unsafe)
		require.NoError(t, err)
		pair := evaluation.Pair{Old: old, New: unsafe, Strategy: evaluation.StrategyUpdate, Send: &unstructured.Unstructured{Object: obj}}
		cluster := &evaluationtest.Cluster{Objs: []map[string]any{invalidWidget}}
		if dryRunErr != nil {
			cluster.DryRunErr = map[string]error{"update " + crd: dryRunErr}
		}
		res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: evaluation.Plan{Pairs: []evaluation.Pair{pair}},
			Settings: &cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
		require.NoError(t, err)
		if err := res.Err(); err != nil {
			return res.Findings, cluster.Lists, &report.DeployError{Err: err, Report: report.New(nil, res.Findings, cfg.MaxFindingsPerCRD, nil)}
		}
		return res.Findings, cluster.Lists, nil
	}
	rejects := func(fs []finding.Finding) []finding.Finding {
		var out []finding.Finding
		for _, f := range fs {
			if f.Check == config.CheckAPIServerRejects {
				out = append(out, f)
			}
		}
		return out
	}

	t.Run("the same settings: each finding once, as without the webhook", func(t *testing.T) {
		findings, lists, err := deploy(t, nil, ours())
		without, _, _ := deploy(t, nil, nil)
		require.Equal(t, without, findings, "the webhook's denial adds nothing the hook does not find itself")
		require.Empty(t, rejects(findings))
		require.Equal(t, []string{crd + " v1"}, lists, "the stored objects are read: the apiserver accepts the CRD")
		require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
		for _, fp := range []string{enumFP, minimumFP} {
			require.Equal(t, 1, strings.Count(err.Error(), "[fp:"+fp+"]"), "%s once in:\n%s", fp, err)
		}
		require.NotContains(t, err.Error(), "admission webhook")
	})

	t.Run("the webhook finds more: only that, as its denial", func(t *testing.T) {
		exempt := map[string]any{"exemptions": []any{map[string]any{"crd": crd, "checks": []any{"enum"}, "reason": "PR 7"}}}
		findings, _, err := deploy(t, exempt, ours())
		rs := rejects(findings)
		require.Len(t, rs, 1)
		require.Equal(t, finding.SeverityError, rs[0].Severity)
		line := report.FindingLine(rs[0])
		require.True(t, strings.HasPrefix(line, "crd "+crd+": [apiserverRejects] the CRDUpgradeSafety admission webhook denies the "+
			"update (server-side dry run) for 1 finding this check does not report as an error: crd "+crd+" version v1 field ^.spec.color: [enum] "), line)
		require.NotContains(t, line, minimumFP)
		require.Equal(t, 1, strings.Count(err.Error(), "[fp:"+minimumFP+"]"), "%s", err)
		// One fingerprint ends the line, its own; the webhook's is
		// labelled inside, with why the webhook denies what is a
		// warning here (issue 38 item 5: items 2 and 3).
		require.Equal(t, 1, strings.Count(line, "[fp:"), line)
		require.True(t, strings.HasSuffix(line, " (webhook finding "+enumFP+": an error under the webhook's settings; "+
			"under this check's a warning, exempted: PR 7) [fp:"+rs[0].Fingerprint+"]"), line)
		require.Len(t, rs[0].Denied, 1)
		require.Equal(t, enumFP, rs[0].Denied[0].Fingerprint)
		require.NotNil(t, rs[0].Denied[0].Here, "the hook's own finding of the change, as a fact")
		require.Equal(t, finding.SeverityWarning, rs[0].Denied[0].Here.Severity)
		require.Equal(t, "PR 7", rs[0].Denied[0].Here.Waiver.Reason)
		require.Zero(t, strings.Count(err.Error(), "[fp:"+enumFP+"]"), "%s", err)
		require.Equal(t, 1, strings.Count(err.Error(), "webhook finding "+enumFP), "the webhook's enum finding, in its denial (the hook's exempted one is a warning): %s", err)
	})

	t.Run("the webhook finds what this check does not: said so", func(t *testing.T) {
		off := map[string]any{"checks": map[string]any{"sameVersion": map[string]any{"enum": map[string]any{"removalEnforcement": "None"}}}}
		findings, _, _ := deploy(t, off, ours())
		rs := rejects(findings)
		require.Len(t, rs, 1)
		require.Nil(t, rs[0].Denied[0].Here)
		require.Contains(t, report.FindingLine(rs[0]), " (webhook finding "+enumFP+": an error under the webhook's settings; not found under this check's) [fp:")
	})

	t.Run("past the lines of the denial: each named by its facts", func(t *testing.T) {
		// A denial of more error findings than it has lines for
		// (report.MaxDenialLines), none of which this check reports.
		var many []finding.Finding
		for i := range report.MaxDenialLines + 5 {
			many = append(many, finding.Finding{CRD: crd, Version: "v1", Field: schemapath.Path(fmt.Sprintf("^.spec.f%02d", i)),
				Check: config.CheckType, Severity: finding.SeverityError, ChangeText: "type changed",
				Fingerprint: fmt.Sprintf("%012x", i)})
		}
		st := &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "denied",
			Details: &metav1.StatusDetails{Name: crd, Causes: report.DenialCauses(many)}}
		findings, _, _ := deploy(t, nil, webhookerrors.ToStatusErr("crd-upgrade-safety.kapp.k14s.io", st))
		rs := rejects(findings)
		require.Len(t, rs, 1)
		require.Len(t, rs[0].Denied, len(many))
		line := report.FindingLine(rs[0])
		for i, f := range many {
			named := "crd " + crd + " version v1 field " + f.Field.String() + ": [type] "
			if i >= report.MaxDenialLines {
				named = "crd " + crd + " version v1 field " + f.Field.String() + ": [type] (webhook finding " + f.Fingerprint + ":"
			}
			require.Contains(t, line, named)
			require.NotContains(t, line, "[fp:"+f.Fingerprint+"]")
		}
	})

	t.Run("always-replace: the deletion said once, from the replace's side", func(t *testing.T) {
		// kapp's always-replace deletes the CRD first: the dry run is
		// that delete, which the webhook denies as a deletion (crdDeletion
		// "deleted") where the hook reports the replace (crdDeletion
		// "replaced"): the same loss, two fingerprints.
		const objects = 3
		review, _ := reviewer(t, nil, &evaluationtest.Cluster{Count: objects})
		del := review.Review(context.Background(), deleteRequest(t, testcrd.OldCRD))
		require.False(t, del.Allowed)
		deletedFP := config.ParseFindingFacts(del.Result.Details.Causes[0].Field).Fingerprint
		safe := testcrd.MustCRD(t, testcrd.SafeCRD)
		replace := func(t *testing.T, raw map[string]any, dryRunErr error) []finding.Finding {
			t.Helper()
			cfg, err := config.Decode(raw)
			require.NoError(t, err)
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(safe)
			require.NoError(t, err)
			pair := evaluation.Pair{Old: old, New: safe, Strategy: evaluation.StrategyAlwaysReplace, Send: &unstructured.Unstructured{Object: obj}}
			cluster := &evaluationtest.Cluster{Count: objects, DryRunErr: map[string]error{"delete " + crd: dryRunErr}}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: evaluation.Plan{Pairs: []evaluation.Pair{pair}},
				Settings: &cfg, Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			return res.Findings
		}
		denied := webhookerrors.ToStatusErr("crd-upgrade-safety.kapp.k14s.io", del.Result.DeepCopy())
		findings := replace(t, nil, denied)
		require.Equal(t, replace(t, nil, nil), findings, "the webhook's denial adds nothing the hook does not find itself")
		require.Empty(t, rejects(findings))
		require.Len(t, findings, 1)
		require.Equal(t, config.CheckCRDDeletion, findings[0].Check)
		require.Equal(t, "replaced", findings[0].Change.Kind)
		require.NotEqual(t, deletedFP, findings[0].Fingerprint, "a waiver of the one never names the other")

		// Accepted in the hook's settings (a warning here), denied by the
		// webhook: listed, and why.
		accept := map[string]any{"acceptDataLoss": []any{map[string]any{"crd": crd, "check": "crdDeletion", "objects": objects,
			"reason": "recreated by the operator", "expires": "2099-01-01"}}}
		findings = replace(t, accept, denied)
		rs := rejects(findings)
		require.Len(t, rs, 1)
		require.Equal(t, "replaced", rs[0].Denied[0].Here.Change.Kind)
		line := report.FindingLine(rs[0])
		require.Contains(t, line, "the CRDUpgradeSafety admission webhook denies the delete (server-side dry run) for 1 finding this check does not report as an error: "+
			"crd "+crd+": [crdDeletion] data loss: deleting the CRD would delete its 3 existing custom resources (webhook finding "+deletedFP+
			": an error under the webhook's settings; under this check's a warning, data loss accepted: recreated by the operator", line)

		// Another webhook's crdDeletion-looking denial of an update is no
		// replace: matched by fingerprint only.
		findings, _, _ = deploy(t, nil, webhookerrors.ToStatusErr("crd-upgrade-safety.kapp.k14s.io", del.Result.DeepCopy()))
		require.Len(t, rejects(findings), 1, "an update's denial for a deletion is not the update's findings")
	})

	t.Run("another webhook's denial: refused as before", func(t *testing.T) {
		other := webhookerrors.ToStatusErr("other.example.com", &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "not today"})
		findings, lists, _ := deploy(t, nil, other)
		rs := rejects(findings)
		require.Len(t, rs, 1)
		require.Equal(t, `the apiserver refuses the update (server-side dry run): admission webhook "other.example.com" denied the request: not today`, rs[0].ChangeText)
		require.Empty(t, lists, "a refused update changes nothing: existing resources are not checked")
	})

	t.Run("our causes recognised by their type, not words", func(t *testing.T) {
		// Our denial's words, without its causes, are any webhook's.
		st := denial.Result.DeepCopy()
		st.Details = nil
		findings, _, _ := deploy(t, nil, fmt.Errorf("wrapped: %w", webhookerrors.ToStatusErr("crd-upgrade-safety.kapp.k14s.io", st)))
		require.Len(t, rejects(findings), 1)
		var se *apierrors.StatusError
		require.ErrorAs(t, ours(), &se)
		require.Len(t, se.ErrStatus.Details.Causes, 2, "the apiserver keeps a webhook's causes")
	})
}
