package webhook

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// reviewer returns a Reviewer with the settings of raw (as a settings file
// holds them) over cluster, and the lines it logged.
func reviewer(t *testing.T, raw map[string]any, cluster *evaluationtest.Cluster) (*Reviewer, *[]string) {
	t.Helper()
	cfg, err := config.Decode(raw)
	require.NoError(t, err)
	cfg = WebhookSettings(cfg)
	var logged []string
	return &Reviewer{Settings: &cfg, Cluster: cluster, Logf: func(format string, args ...any) {
		logged = append(logged, strings.TrimSpace(fmt.Sprintf(format, args...)))
	}}, &logged
}

func request(t *testing.T, op admissionv1.Operation, newDoc, oldDoc string, annotate ...string) *admissionv1.AdmissionRequest {
	t.Helper()
	var newCRD, oldCRD *apiextv1.CustomResourceDefinition
	if newDoc != "" {
		newCRD = testcrd.MustCRD(t, newDoc)
		if len(annotate) > 0 {
			newCRD.Annotations = map[string]string{}
			for i := 0; i+1 < len(annotate); i += 2 {
				newCRD.Annotations[annotate[i]] = annotate[i+1]
			}
		}
	}
	if oldDoc != "" {
		oldCRD = testcrd.MustCRD(t, oldDoc)
	}
	req, err := webhooktest.Request(op, newCRD, oldCRD)
	require.NoError(t, err)
	return req
}

func deleteRequest(t *testing.T, doc string, annotate ...string) *admissionv1.AdmissionRequest {
	t.Helper()
	req := request(t, admissionv1.Delete, doc, "", annotate...)
	req.Object, req.OldObject = req.OldObject, req.Object
	return req
}

// invalidWidget is a Widget that the unsafe CRD refuses (size below 5,
// color blue no longer allowed).
var invalidWidget = map[string]any{
	"apiVersion": "example.com/v1", "kind": "Widget",
	"metadata": map[string]any{"name": "w1", "namespace": "default"},
	"spec":     map[string]any{"size": int64(2), "color": "blue"},
}

func TestReviewUpdate(t *testing.T) {
	unsafe := request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD)

	t.Run("unsafe: denied with the findings, no dry run", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Objs: []map[string]any{invalidWidget}}
		r, logged := reviewer(t, nil, cluster)
		resp := r.Review(context.Background(), unsafe)
		require.False(t, resp.Allowed)
		require.Equal(t, unsafe.UID, resp.UID)
		require.EqualValues(t, 403, resp.Result.Code)
		require.Equal(t, metav1.StatusReasonForbidden, resp.Result.Reason)
		// The stored object's impact, joined to the findings that cause it:
		// the object, the field and the rule, not the value it holds.
		require.Equal(t, `CRDUpgradeSafety denied the update of CRD widgets.example.com: 2 error findings:
  crd widgets.example.com version v1 field ^.spec.color: [enum] enum values removed: ["blue"]: 1 of 1 stored Widget rejected: default/w1 (Unsupported value); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused [fp:ed63ac23ebcd]
    way forward: fix the stored objects that fail the new constraint first (default/w1): the change is safe once none does; or keep the old constraint
  crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5: 1 of 1 stored Widget rejected: default/w1 (Invalid value); updates that leave these fields alone still pass (validation ratcheting); a create (a restore, a re-apply elsewhere, a GitOps recreate) or a change of them is refused [fp:c25b6326ccb9]
    way forward: fix the stored objects that fail the new constraint first (default/w1): the change is safe once none does; or keep the old constraint`, resp.Result.Message)
		require.Empty(t, resp.Warnings)
		require.Empty(t, cluster.DryRuns, "a dry run would call this webhook again")
		require.Equal(t, []string{"widgets.example.com v1"}, cluster.Lists)
		require.Equal(t, map[string]string{"errors": "2", "warnings": "0"}, resp.AuditAnnotations)
		require.Len(t, *logged, 1)
		require.Regexp(t, `^review uid=review-\d+ op=UPDATE crd=widgets.example.com user="test" dryRun=false allowed=false errors=2 warnings=0 took=`, (*logged)[0])
	})
	t.Run("safe: allowed", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Objs: []map[string]any{invalidWidget}}
		r, _ := reviewer(t, nil, cluster)
		resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD))
		require.True(t, resp.Allowed)
		require.Nil(t, resp.Result)
		require.Empty(t, resp.Warnings)
	})
	t.Run("mode warn: allowed with the findings as warnings", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"mode": "warn"}, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), unsafe)
		require.True(t, resp.Allowed)
		require.Equal(t, []string{
			`CRDUpgradeSafety: version v1 field ^.spec.color: [enum] enum values removed: ["blue"]: no stored Widgets to affect [fp:ed63ac23ebcd]`,
			`CRDUpgradeSafety: version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5: no stored Widgets to affect [fp:c25b6326ccb9]`,
		}, resp.Warnings)
	})
	t.Run("a dry run is judged the same", func(t *testing.T) {
		r, logged := reviewer(t, nil, &evaluationtest.Cluster{})
		dry := *unsafe
		yes := true
		dry.DryRun = &yes
		resp := r.Review(context.Background(), &dry)
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "2 error findings")
		require.Contains(t, (*logged)[0], "dryRun=true allowed=false")
	})
	t.Run("the settings' exemptions apply", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"exemptions": []any{map[string]any{"crd": "widgets.example.com", "checks": []any{"enum"}, "reason": "PR 7"}}},
			&evaluationtest.Cluster{})
		resp := r.Review(context.Background(), unsafe)
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "1 error finding:\n  crd widgets.example.com version v1 field ^.spec.size: [minimum]")
		require.Equal(t, []string{`CRDUpgradeSafety: version v1 field ^.spec.color: [enum] enum values removed: ["blue"]: no stored Widgets to affect (exempted: PR 7) [fp:ed63ac23ebcd]`}, resp.Warnings)
	})
	t.Run("by default the waiver annotations waive nothing in the webhook", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD,
			config.WaiveAnnotation, "enum,minimum", config.WaiveReasonAnnotation, "reviewed in PR 9"))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "2 error findings")
		require.Contains(t, resp.Result.Message, "(not exempted: the settings' annotationWaivers do not let a waiver annotation waive this check")
		require.Equal(t, "enum,minimum", resp.AuditAnnotations["waived"], "the annotation the writer sent is audited all the same")
	})
	t.Run("the waiver annotations apply for the checks the admin allows", func(t *testing.T) {
		r, logged := reviewer(t, map[string]any{"annotationWaivers": map[string]any{"checks": []any{"enum", "minimum"}}}, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD,
			config.WaiveAnnotation, "enum,minimum", config.WaiveReasonAnnotation, "reviewed in PR 9"))
		require.True(t, resp.Allowed)
		require.Equal(t, []string{
			`CRDUpgradeSafety: version v1 field ^.spec.color: [enum] enum values removed: ["blue"]: no stored Widgets to affect (exempted: waive annotation: reviewed in PR 9) [fp:ed63ac23ebcd]`,
			`CRDUpgradeSafety: version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5: no stored Widgets to affect (exempted: waive annotation: reviewed in PR 9) [fp:c25b6326ccb9]`,
		}, resp.Warnings)
		require.Equal(t, "enum,minimum", resp.AuditAnnotations["waived"])
		require.Contains(t, (*logged)[0], `waived="enum,minimum"`)
	})
	t.Run("the settings' waivers: by fingerprint, and a stale one", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"waivers": []any{
			map[string]any{"fingerprint": "ed63ac23ebcd", "reason": "PR 7", "owner": "team-widgets"},
			map[string]any{"crd": "widgets.example.com", "checks": []any{"type"}, "reason": "reverted"},
			map[string]any{"crd": "gadgets.example.com", "reason": "another CRD"},
		}}, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), unsafe)
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "1 error finding:\n  crd widgets.example.com version v1 field ^.spec.size: [minimum]")
		require.Equal(t, []string{
			`CRDUpgradeSafety: [staleWaiver] stale waiver: it matches no finding of this CRD (checks type), reverted [fp:` + resp.Warnings[0][len(resp.Warnings[0])-13:],
			`CRDUpgradeSafety: version v1 field ^.spec.color: [enum] enum values removed: ["blue"]: no stored Widgets to affect (exempted: PR 7; owner team-widgets) [fp:ed63ac23ebcd]`,
		}, resp.Warnings)
	})
	t.Run("waived by fingerprint annotation: audited", func(t *testing.T) {
		r, logged := reviewer(t, map[string]any{"annotationWaivers": map[string]any{"checks": []any{"enum", "minimum"}}}, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD,
			config.WaiveFingerprintsAnnotation, "ed63ac23ebcd,c25b6326ccb9", config.WaiveReasonAnnotation, "reviewed in PR 9"))
		require.True(t, resp.Allowed)
		require.Len(t, resp.Warnings, 2)
		require.Equal(t, "fingerprints=ed63ac23ebcd,c25b6326ccb9", resp.AuditAnnotations["waived"])
		require.Contains(t, (*logged)[0], `waived="fingerprints=ed63ac23ebcd,c25b6326ccb9"`)
	})
	t.Run("an invalid waiver is denied, whatever the mode", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"mode": "warn", "failMode": "open"}, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD,
			config.WaiveAnnotation, "enum"))
		require.False(t, resp.Allowed)
		require.Equal(t, "CRDUpgradeSafety denied the update of CRD widgets.example.com: CRD widgets.example.com: invalid waiver annotation: "+
			"crd-upgrade-safety.kapp.k14s.io/waive requires crd-upgrade-safety.kapp.k14s.io/waive-reason: say why the findings are acceptable (a review, a migration)",
			resp.Result.Message)
	})
	t.Run("apiserverRejects is the apiserver's own business", func(t *testing.T) {
		// The apiserver validated the object before calling the webhook:
		// the library would only repeat it (here: a structural schema
		// needs a type).
		noType := strings.Replace(testcrd.SafeCRD, "size: {type: integer, minimum: 1}", "size: {minimum: 1}", 1)
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
		resp := r.Review(context.Background(), request(t, admissionv1.Update, noType, testcrd.OldCRD))
		require.True(t, resp.Allowed)
		require.Empty(t, resp.Warnings)
	})
}

func TestReviewSkips(t *testing.T) {
	cluster := &evaluationtest.Cluster{Err: errors.New("must not be called")}
	r, logged := reviewer(t, nil, cluster)
	relabelled := strings.Replace(testcrd.OldCRD, "name: widgets.example.com", "name: widgets.example.com\n  labels: {team: a}", 1)
	now := metav1.Now()
	old := testcrd.MustCRD(t, testcrd.OldCRD)
	old.DeletionTimestamp = &now
	deleting, err := webhooktest.Request(admissionv1.Update, testcrd.MustCRD(t, testcrd.UnsafeCRD), old)
	require.NoError(t, err)
	status := request(t, admissionv1.Update, testcrd.UnsafeCRD, testcrd.OldCRD)
	status.SubResource = "status"

	for _, req := range []*admissionv1.AdmissionRequest{
		request(t, admissionv1.Create, testcrd.UnsafeCRD, ""),
		request(t, admissionv1.Update, relabelled, testcrd.OldCRD),
		deleting,
		status,
	} {
		resp := r.Review(context.Background(), req)
		require.True(t, resp.Allowed)
		require.Empty(t, resp.Warnings)
	}
	require.Empty(t, cluster.Lists)
	require.Empty(t, cluster.Counts)
	var skipped []string
	for _, l := range *logged {
		_, s, _ := strings.Cut(l, "skipped=")
		s, _, _ = strings.Cut(s, " took=")
		skipped = append(skipped, s)
	}
	require.Equal(t, []string{`"nothing stored to protect on create"`, `"spec unchanged"`, `"the CRD is being deleted"`,
		`"status.storedVersions does not shrink"`},
		skipped)
}

func TestReviewDelete(t *testing.T) {
	t.Run("custom resources would be lost: denied", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Count: 3}
		r, _ := reviewer(t, nil, cluster)
		resp := r.Review(context.Background(), deleteRequest(t, testcrd.OldCRD))
		require.False(t, resp.Allowed)
		require.Equal(t, "CRDUpgradeSafety denied the delete of CRD widgets.example.com: 1 error finding:\n"+
			"  crd widgets.example.com: [crdDeletion] data loss: deleting the CRD would delete its 3 existing custom resources [fp:7abd660cb35a]\n"+
			"    way forward: back up the custom resources ('kubectl get widgets.example.com --all-namespaces -o yaml > widgets.example.com.backup.yaml'), "+
			"then delete them explicitly before the CRD; or keep the CRD", resp.Result.Message)
		require.Equal(t, []string{"widgets.example.com"}, cluster.Counts)
	})
	t.Run("none: allowed", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
		require.True(t, r.Review(context.Background(), deleteRequest(t, testcrd.OldCRD)).Allowed)
	})
	t.Run("waived on the CRD: denied, even where the admin lets annotations waive crdDeletion", func(t *testing.T) {
		for _, raw := range []map[string]any{nil, {"annotationWaivers": map[string]any{"checks": []any{"crdDeletion"}}}} {
			r, _ := reviewer(t, raw, &evaluationtest.Cluster{Count: 3})
			resp := r.Review(context.Background(), deleteRequest(t, testcrd.OldCRD,
				config.WaiveAnnotation, "crdDeletion", config.WaiveReasonAnnotation, "moved to gadgets"))
			require.False(t, resp.Allowed)
			require.Contains(t, resp.Result.Message, "[crdDeletion] data loss: deleting the CRD would delete its 3 existing custom resources (not exempted: a waiver annotation")
			require.Contains(t, resp.Result.Message, "or keep the CRD; or, once losing this data is reviewed, accept exactly this loss in the settings: "+
				"acceptDataLoss: [{crd: widgets.example.com, check: crdDeletion, objects: 3, reason: ..., expires: YYYY-MM-DD}]")
		}
	})
	t.Run("accepted in the settings for as many objects: allowed with a warning; for fewer: denied", func(t *testing.T) {
		accept := func(objects int) map[string]any {
			return map[string]any{"acceptDataLoss": []any{map[string]any{"crd": "widgets.example.com", "check": "crdDeletion",
				"objects": objects, "reason": "moved to gadgets", "expires": "2099-12-31"}}}
		}
		r, _ := reviewer(t, accept(3), &evaluationtest.Cluster{Count: 3})
		resp := r.Review(context.Background(), deleteRequest(t, testcrd.OldCRD))
		require.True(t, resp.Allowed)
		require.Equal(t, []string{"CRDUpgradeSafety: [crdDeletion] data loss: deleting the CRD would delete its 3 existing custom resources (data loss accepted: moved to gadgets; at most 3 objects; until 2099-12-31) [fp:7abd660cb35a]"},
			resp.Warnings)

		r, _ = reviewer(t, accept(2), &evaluationtest.Cluster{Count: 3})
		resp = r.Review(context.Background(), deleteRequest(t, testcrd.OldCRD))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "not accepted: the loss affects 3 objects, more than the 2 accepted")
	})
	t.Run("without oldObject the live CRD is read", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Count: 1, CRDs: map[string]*apiextv1.CustomResourceDefinition{
			"widgets.example.com": testcrd.MustCRD(t, testcrd.OldCRD)}}
		r, _ := reviewer(t, nil, cluster)
		req := deleteRequest(t, testcrd.OldCRD)
		req.OldObject.Raw = nil
		resp := r.Review(context.Background(), req)
		require.False(t, resp.Allowed)
		require.Equal(t, [][]string{{"widgets.example.com"}}, cluster.Gets)
	})
}

// TestReviewCannotJudge: when the live checks fail or do not finish,
// failMode decides: closed denies, open allows with a warning.
func TestReviewCannotJudge(t *testing.T) {
	unsafe := request(t, admissionv1.Update, testcrd.SafeCRD, testcrd.OldCRD)
	t.Run("API error, closed", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Err: errors.New("connection refused")})
		resp := r.Review(context.Background(), unsafe)
		require.False(t, resp.Allowed)
		require.Equal(t, "CRDUpgradeSafety could not check the update of CRD widgets.example.com, denied under failMode closed: "+
			"checking existing custom resources of CRD widgets.example.com: connection refused", resp.Result.Message)
	})
	t.Run("API error, open", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"failMode": "open"}, &evaluationtest.Cluster{Err: errors.New("connection refused")})
		resp := r.Review(context.Background(), unsafe)
		require.True(t, resp.Allowed)
		require.Equal(t, []string{"CRDUpgradeSafety: could not check the update of CRD widgets.example.com, allowed under failMode open: " +
			"checking existing custom resources of CRD widgets.example.com: connection refused"}, resp.Warnings)
	})
	forbidden := &kube.ForbiddenError{Group: "example.com", Resource: "widgets", Verb: "list",
		Err: apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New("RBAC: no rule"))}
	t.Run("forbidden, closed", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{Err: forbidden})
		resp := r.Review(context.Background(), unsafe)
		require.False(t, resp.Allowed)
		require.Equal(t, "CRDUpgradeSafety could not check the update of CRD widgets.example.com, denied under failMode closed: "+
			"the webhook may not list widgets.example.com (403 Forbidden from the apiserver); "+
			`its ClusterRole lacks the rule {apiGroups: ["example.com"], resources: ["widgets"], verbs: ["list"]}; `+
			"regenerate the role for the cluster's CRDs and apply it: "+report.WebhookRBACCommand, resp.Result.Message)
	})
	t.Run("forbidden, open", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"failMode": "open"}, &evaluationtest.Cluster{Err: fmt.Errorf("wrapped: %w", forbidden)})
		resp := r.Review(context.Background(), unsafe)
		require.True(t, resp.Allowed)
		require.Equal(t, []string{
			"CRDUpgradeSafety: could not check the update of CRD widgets.example.com, allowed under failMode open: " +
				"the webhook may not list widgets.example.com (403 Forbidden from the apiserver)",
			`CRDUpgradeSafety: its ClusterRole lacks the rule {apiGroups: ["example.com"], resources: ["widgets"], verbs: ["list"]}`,
			"CRDUpgradeSafety: regenerate the role for the cluster's CRDs and apply it: " + report.WebhookRBACCommand,
		}, resp.Warnings)
	})
	t.Run("deadline", func(t *testing.T) {
		r, _ := reviewer(t, nil, nil)
		r.Cluster = blockingCluster{&evaluationtest.Cluster{}}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		resp := r.Review(ctx, unsafe)
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "denied under failMode closed: the live checks did not finish in time")
	})
	t.Run("liveChecksTimeout", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"liveChecksTimeout": "20ms", "failMode": "open"}, nil)
		r.Cluster = blockingCluster{&evaluationtest.Cluster{}}
		resp := r.Review(context.Background(), unsafe)
		require.True(t, resp.Allowed)
		require.Contains(t, resp.Warnings[0], "allowed under failMode open: the live checks did not finish in time")
		require.Contains(t, resp.Warnings[0], "deadline of 20ms (liveChecksTimeout) exceeded")
	})
	t.Run("panic", func(t *testing.T) {
		r, logged := reviewer(t, nil, nil)
		r.Cluster = panickingCluster{&evaluationtest.Cluster{}}
		resp := r.Review(context.Background(), unsafe)
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "denied under failMode closed: internal error: panic: boom")
		require.Contains(t, (*logged)[0], "panic reviewing UPDATE widgets.example.com: boom")
	})
}

type blockingCluster struct{ *evaluationtest.Cluster }

func (blockingCluster) ListCustomResources(ctx context.Context, _ *apiextv1.CustomResourceDefinition, _ string,
	_ func([]map[string]any) error) error {
	<-ctx.Done()
	return ctx.Err()
}

type panickingCluster struct{ *evaluationtest.Cluster }

func (panickingCluster) ListCustomResources(context.Context, *apiextv1.CustomResourceDefinition, string,
	func([]map[string]any) error) error {
	panic("boom")
}

// lifecycleCRD is the Widget CRD with the given versions (the keys of
// each, in YAML flow style), each with a schema of spec.size.
func lifecycleCRD(versions ...string) string {
	doc := testcrd.Header("widgets", "Widget")
	for _, v := range versions {
		doc += "\n  - {" + v + ", schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer, minimum: 1}}}}}}}"
	}
	return doc + "\nstatus:\n  storedVersions: [v1]\n"
}

// TestReviewVersionLifecycle: the webhook judges a version's lifecycle
// (checks.crd.versionLifecycle) and alpha versions (alphaVersionEnforcement)
// with the settings it reads, as a deploy does.
func TestReviewVersionLifecycle(t *testing.T) {
	const (
		v1      = "name: v1, served: true, storage: true"
		beta    = "name: v1beta1, served: true, storage: false"
		betaDep = "name: v1beta1, served: true, storage: false, deprecated: true"
		betaOff = "name: v1beta1, served: false, storage: false"
	)
	unserve := request(t, admissionv1.Update, lifecycleCRD(betaOff, v1), lifecycleCRD(beta, v1))
	servedWarning := `CRDUpgradeSafety: version v1beta1: [servedVersionRemoval] version "v1beta1" no longer served (served: true -> false): its clients get 404 Not Found`
	lifecycle := `version v1beta1: [versionLifecycle] version "v1beta1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`

	t.Run("unserved without deprecation: allowed, with a warning", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
		resp := withoutFingerprints(r.Review(context.Background(), unserve))
		require.True(t, resp.Allowed)
		require.Equal(t, []string{servedWarning, "CRDUpgradeSafety: " + lifecycle}, resp.Warnings)
	})
	t.Run("notDeprecatedEnforcement Strict: denied", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"checks": map[string]any{"crd": map[string]any{
			"versionLifecycle": map[string]any{"notDeprecatedEnforcement": "Strict"}}}}, &evaluationtest.Cluster{})
		resp := withoutFingerprints(r.Review(context.Background(), unserve))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "1 error finding:\n  crd widgets.example.com "+lifecycle+
			"\n    way forward: keep \"v1beta1\" served and mark it deprecated: true (with a deprecationWarning) in a release first")
		require.Equal(t, []string{servedWarning}, resp.Warnings)
	})
	t.Run("deprecated in the old CRD: only servedVersionRemoval's warning", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"checks": map[string]any{"crd": map[string]any{
			"versionLifecycle": map[string]any{"notDeprecatedEnforcement": "Strict"}}}}, &evaluationtest.Cluster{})
		resp := withoutFingerprints(r.Review(context.Background(), request(t, admissionv1.Update, lifecycleCRD(betaOff, v1), lifecycleCRD(betaDep, v1))))
		require.True(t, resp.Allowed)
		require.Equal(t, []string{servedWarning}, resp.Warnings)
	})

	// An alpha version's minimum raised: an error, a warning under
	// alphaVersionEnforcement Warn; the same in v1 stays an error.
	alphaOld := lifecycleCRD("name: v1alpha1, served: true, storage: false", v1)
	alphaNew := strings.Replace(alphaOld, "minimum: 1", "minimum: 5", 1)
	bothNew := strings.ReplaceAll(alphaOld, "minimum: 1", "minimum: 5")
	raised := `[minimum] minimum increased: 1 -> 5: no stored Widgets to affect`
	t.Run("alpha, by default: denied", func(t *testing.T) {
		r, _ := reviewer(t, nil, &evaluationtest.Cluster{})
		resp := withoutFingerprints(r.Review(context.Background(), request(t, admissionv1.Update, alphaNew, alphaOld)))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "version v1alpha1 field ^.spec.size: "+raised)
	})
	t.Run("alpha, alphaVersionEnforcement Warn: allowed, with a warning that says why", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"alphaVersionEnforcement": "Warn"}, &evaluationtest.Cluster{})
		resp := withoutFingerprints(r.Review(context.Background(), request(t, admissionv1.Update, alphaNew, alphaOld)))
		require.True(t, resp.Allowed)
		require.Equal(t, []string{"CRDUpgradeSafety: version v1alpha1 field ^.spec.size: " + raised +
			" (alpha version: a warning under alphaVersionEnforcement Warn)"}, resp.Warnings)
	})
	t.Run("alphaVersionEnforcement Warn: GA stays strict", func(t *testing.T) {
		r, _ := reviewer(t, map[string]any{"alphaVersionEnforcement": "Warn"}, &evaluationtest.Cluster{})
		resp := withoutFingerprints(r.Review(context.Background(), request(t, admissionv1.Update, bothNew, alphaOld)))
		require.False(t, resp.Allowed)
		require.Contains(t, resp.Result.Message, "1 error finding:\n  crd widgets.example.com version v1 field ^.spec.size: "+raised)
		require.Equal(t, []string{"CRDUpgradeSafety: version v1alpha1 field ^.spec.size: " + raised +
			" (alpha version: a warning under alphaVersionEnforcement Warn)"}, resp.Warnings)
	})
}

// fingerprintSuffix is the fingerprint that ends each finding's line.
var fingerprintSuffix = regexp.MustCompile(` \[fp:[0-9a-f]{12}\]`)

// withoutFingerprints is the response with its findings' fingerprints cut
// from the message and the warnings, for tests about their words.
func withoutFingerprints(resp *admissionv1.AdmissionResponse) *admissionv1.AdmissionResponse {
	if resp.Result != nil {
		resp.Result.Message = fingerprintSuffix.ReplaceAllString(resp.Result.Message, "")
	}
	for i, w := range resp.Warnings {
		resp.Warnings[i] = fingerprintSuffix.ReplaceAllString(w, "")
	}
	return resp
}

// TestReviewWithholdsStoredValues: a made-up review that tightens a
// pattern over a stored secret-like token is denied naming the object,
// the field and the rule, and its answer (denial, warnings, audit
// annotations) and log line hold no stored value; the same review under
// webhook.revealStoredValues shows the value refused and the apiserver's
// detail. The finding stays an error either way.
func TestReviewWithholdsStoredValues(t *testing.T) {
	const token = "s3cr3t-t0ken-4f9a"
	crdOf := func(pattern string) string {
		return testcrd.CRDYAML("widgets", "Widget", fmt.Sprintf(`{token: {type: string, pattern: %q}, note: {type: string}}`, pattern))
	}
	req := request(t, admissionv1.Update, crdOf("^[0-9]+$"), crdOf("^[a-z0-9-]+$"))
	stored := []map[string]any{{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "one", "namespace": "default"},
		"spec":     map[string]any{"token": token, "note": "kept"},
	}}
	for _, tc := range []struct {
		name     string
		settings map[string]any
		reveal   bool
	}{
		{"by default", nil, false},
		{"revealStoredValues false", map[string]any{"webhook": map[string]any{"revealStoredValues": false}}, false},
		{"mode warn: the warnings too", map[string]any{"mode": "warn"}, false},
		{"revealStoredValues true", map[string]any{"webhook": map[string]any{"revealStoredValues": true}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, logged := reviewer(t, tc.settings, &evaluationtest.Cluster{Objs: stored})
			resp := r.Review(context.Background(), req)
			answer := strings.Join(append(resp.Warnings, fmt.Sprint(resp.Result), fmt.Sprint(resp.AuditAnnotations)), "\n")
			require.Contains(t, answer, "[pattern] pattern changed")
			if tc.settings["mode"] != "warn" { // (a warning is cut to 256 characters)
				require.Contains(t, answer, "default/one (Invalid value", "the object and the rule")
			}
			require.Contains(t, answer, "^.spec.token", "the field")
			require.NotEmpty(t, *logged)
			require.NotContains(t, strings.Join(*logged, "\n"), token, "the log line")
			if tc.reveal {
				require.Contains(t, answer, `default/one (Invalid value: "`+token+`": spec.token in body should match '^[0-9]+$')`)
			} else {
				require.NotContains(t, answer, token)
				require.NotContains(t, answer, "in body should match", "the apiserver's detail, which may quote values")
			}
			if tc.settings["mode"] == "warn" {
				require.True(t, resp.Allowed)
				require.NotEmpty(t, resp.Warnings)
			} else {
				require.False(t, resp.Allowed)
			}
		})
	}
}
