package preflight

import (
	"context"
	"errors"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gadgetCRD = strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(safeCRD)

// TestRunDryRunSendsWhatKappSends: each CRD change is dry-run with the
// object kapp's clusterapply sends: for an update the new CRD rebased on the
// live one (its resourceVersion and uid), for a create the new CRD, both
// with kapp's identity annotation.
func TestRunDryRunSendsWhatKappSends(t *testing.T) {
	cluster := &evaluationtest.Cluster{}
	check, _ := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), deployGraph(t, "",
		[]ctlres.Resource{live(t, oldCRD)}, []ctlres.Resource{res(t, safeCRD), res(t, gadgetCRD)}))
	require.NoError(t, err)
	require.Equal(t, []string{"create gadgets.example.com", "update widgets.example.com"}, cluster.DryRunVerbs())

	sent := map[evaluation.Verb]*unstructured.Unstructured{}
	for _, d := range cluster.DryRuns {
		sent[d.Verb] = d.Obj
	}
	update := sent[evaluation.VerbUpdate]
	require.Equal(t, "42", update.GetResourceVersion(), "rebased on the live CRD")
	require.Equal(t, "uid-widgets.example.com", string(update.GetUID()))
	require.Equal(t, "v1;/apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com;apiextensions.k8s.io/v1",
		update.GetAnnotations()["kapp.k14s.io/identity"])
	enum, _, _ := unstructured.NestedSlice(update.Object, "spec", "versions")
	require.Contains(t, mustJSON(t, enum), "yellow", "the new spec")

	create := sent[evaluation.VerbCreate]
	require.Empty(t, create.GetResourceVersion())
	require.Contains(t, create.GetAnnotations(), "kapp.k14s.io/identity")
}

// TestSentObjectLeavesTheResourceAlone: the identity annotation goes on the
// sent object only; kapp applies its own resource as it was.
func TestSentObjectLeavesTheResourceAlone(t *testing.T) {
	for _, yaml := range []string{safeCRD, strings.Replace(safeCRD, "  name: widgets.example.com\n",
		"  name: widgets.example.com\n  annotations: {team: a}\n", 1)} {
		r := res(t, yaml)
		before := r.DeepCopyRaw()
		sent, err := sentObject(r)
		require.NoError(t, err)
		require.Contains(t, sent.GetAnnotations(), "kapp.k14s.io/identity")
		require.Equal(t, before, r.UnstructuredObject())
	}
}

func TestRunDryRunRefusals(t *testing.T) {
	const crd = "widgets.example.com"
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, crd,
		nil)
	invalid.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Field:   "spec.validation.openAPIV3Schema.properties[spec]",
		Message: "Forbidden: a rule of an admission plugin",
	}}
	status := func(code int32, reason metav1.StatusReason, msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
	}
	cases := []struct {
		name      string
		err       error
		finding   string // the error finding's line
		runErr    string // or the error Run returns
		newGadget bool   // dry-run the create of a new CRD instead
	}{
		{name: "422 with causes: one finding per cause, at its v1 field path", err: invalid,
			finding: "crd " + crd + " field spec.versions[*].schema.openAPIV3Schema.properties[spec]: [apiserverRejects] " +
				"the apiserver refuses the update (server-side dry run): Forbidden: a rule of an admission plugin"},
		{name: "403 from a webhook: the status message", err: webhookDenial(),
			finding: "crd " + crd + `: [apiserverRejects] the apiserver refuses the update (server-side dry run): admission webhook "crds.example.com" denied the request: not today`},
		{name: "422 from a policy", err: policyDenial(crd),
			finding: "crd " + crd + `: [apiserverRejects] the apiserver refuses the update (server-side dry run): ` +
				`customresourcedefinitions.apiextensions.k8s.io "` + crd + `" is forbidden: ValidatingAdmissionPolicy 'freeze'`},
		{name: "400 from a webhook with its own code", err: status(400, "", `admission webhook "x" denied the request: no`),
			finding: `[apiserverRejects] the apiserver refuses the update (server-side dry run): admission webhook "x" denied the request: no`},
		{name: "create refused", newGadget: true, err: webhookDenial(),
			finding: "crd gadgets.example.com: [apiserverRejects] the apiserver refuses the create (server-side dry run): admission webhook"},
		{name: "a webhook that cannot dry-run: the dry run cannot tell",
			err:    status(400, metav1.StatusReasonBadRequest, `admission webhook "x" does not support dry run`),
			runErr: "server-side dry run of the update of CRD " + crd + `: admission webhook "x" does not support dry run`},
		{name: "500", err: apierrors.NewInternalError(errors.New("etcd unavailable")),
			runErr: "server-side dry run of the update of CRD " + crd + ": Internal error occurred: etcd unavailable"},
		{name: "conflict: the CRD changed since kapp read it",
			err:    apierrors.NewConflict(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, crd, errors.New("changed")),
			runErr: "server-side dry run of the update of CRD " + crd + ": Operation cannot be fulfilled"},
		{name: "401", err: apierrors.NewUnauthorized("token expired"),
			runErr: "server-side dry run of the update of CRD " + crd + ": token expired"},
		{name: "no answer", err: errors.New("connection reset by peer"),
			runErr: "server-side dry run of the update of CRD " + crd + ": connection reset by peer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, newRs := "update "+crd, []ctlres.Resource{res(t, safeCRD)}
			if tc.newGadget {
				key, newRs = "create gadgets.example.com", []ctlres.Resource{res(t, safeCRD), res(t, gadgetCRD)}
			}
			cluster := &evaluationtest.Cluster{DryRunErr: map[string]error{key: tc.err}}
			check, _ := newCheck(t, cluster, nil)
			err := check.Run(context.Background(), deployGraph(t, "", []ctlres.Resource{live(t, oldCRD)}, newRs))
			if tc.runErr != "" {
				require.ErrorContains(t, err, tc.runErr)
				require.NotErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
				return
			}
			var unsafe *evaluation.UnsafeUpgradeError
			require.ErrorAs(t, err, &unsafe)
			require.Len(t, unsafe.Lines, 1, "%q", unsafe.Lines)
			require.Contains(t, unsafe.Lines[0], tc.finding)
			if !tc.newGadget {
				require.Empty(t, cluster.Lists, "a refused update changes nothing: existing resources are not checked")
			}
		})
	}
}

// TestRunDryRunValidates: in a deploy, a create or plain update is
// validated by the apiserver it goes to, in the server-side dry run of every
// CRD of the change set; nothing is applied when any is refused.
func TestRunDryRunValidates(t *testing.T) {
	badSchema := strings.Replace(gadgetCRD, "color: {type: string, enum: [red, green, blue, yellow]}",
		"color: {type: string, enum: [red, green, blue, yellow]}\n            additionalProperties: false", 1)
	require.NotEqual(t, gadgetCRD, badSchema)
	deploy := func(t *testing.T, cluster *evaluationtest.Cluster, raw map[string]any) error {
		old, err := CRDFromResource(live(t, oldCRD))
		require.NoError(t, err)
		cluster.CRDs = map[string]*apiextv1.CustomResourceDefinition{old.Name: old}
		check, _ := newCheck(t, cluster, raw)
		return check.Run(context.Background(), deployGraph(t, "",
			[]ctlres.Resource{live(t, oldCRD)}, []ctlres.Resource{res(t, safeCRD), res(t, badSchema)}))
	}

	t.Run("one of several refused", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Validates: true}
		err := deploy(t, cluster, nil)
		var unsafe *evaluation.UnsafeUpgradeError
		require.ErrorAs(t, err, &unsafe)
		require.Len(t, unsafe.Findings, 1, "%q", unsafe.Lines)
		require.Equal(t, "crd gadgets.example.com field spec.versions[*].schema.openAPIV3Schema.properties[spec].additionalProperties: "+
			"[apiserverRejects] the apiserver refuses the create (server-side dry run): Forbidden: additionalProperties and properties are mutual exclusive",
			unsafe.Lines[0])
		require.Equal(t, []string{"create gadgets.example.com", "update widgets.example.com"}, cluster.DryRunVerbs())
	})

	// The apiserver of the cluster decides, in its own version: a create
	// it accepts is not refused by the library's version offline.
	t.Run("accepted by the cluster's apiserver", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{}
		require.NoError(t, deploy(t, cluster, nil))
		require.Equal(t, []string{"create gadgets.example.com", "update widgets.example.com"}, cluster.DryRunVerbs())
	})

	t.Run("apiserverRejects off: not dry-run", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Validates: true}
		require.NoError(t, deploy(t, cluster, map[string]any{
			"checks": map[string]any{"crd": map[string]any{"apiserverRejects": map[string]any{"enabled": false}}},
		}))
		require.Empty(t, cluster.DryRunVerbs())
	})
}

// TestRunExistsIsNotSent: a CRD kapp only waits for (kapp.k14s.io/exists)
// is neither validated nor sent.
func TestRunExistsIsNotSent(t *testing.T) {
	cluster := &evaluationtest.Cluster{}
	check, _ := newCheck(t, cluster, nil)
	placeholder := res(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"+
		"metadata: {name: gadgets.example.com, annotations: {kapp.k14s.io/exists: \"\"}}\n")
	err := check.Run(context.Background(), deployGraph(t, "", nil, []ctlres.Resource{placeholder}))
	require.NoError(t, err)
	require.Zero(t, cluster.Contacts)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := (&unstructured.Unstructured{Object: map[string]any{"v": v}}).MarshalJSON()
	require.NoError(t, err)
	return string(b)
}

// TestRunDryRunLeavesOurWebhooksWarnings: the warnings the CRDUpgradeSafety
// webhook gives on the dry run repeat the check's own findings; the other
// warnings of the apiserver are reported.
func TestRunDryRunLeavesOurWebhooksWarnings(t *testing.T) {
	cluster := &evaluationtest.Cluster{DryRunWarnings: []string{
		"CRDUpgradeSafety: version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5 (exempted: waive annotation: r)",
		"another webhook: careful",
	}}
	check, out := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), deployGraph(t, "", []ctlres.Resource{live(t, oldCRD)}, []ctlres.Resource{res(t, safeCRD)}))
	require.NoError(t, err)
	require.Equal(t, "Warning: CRDUpgradeSafety: crd widgets.example.com: [apiserverRejects] the apiserver warns on the update (server-side dry run): another webhook: careful\n",
		out.String())
}
