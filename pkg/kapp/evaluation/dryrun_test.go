package evaluation_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var gadgetCRD = strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(testcrd.SafeCRD)

// sent is the object a client sends for crd, as the kapp hook hands it over
// (Pair.Send).
func sent(t *testing.T, crd *apiextv1.CustomResourceDefinition) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: obj}
}

// updatePair is the update of the CRD oldYAML to newYAML, sent rebased on
// the live CRD (its resourceVersion), to be dry-run.
func updatePair(t *testing.T, oldYAML, newYAML string) evaluation.Pair {
	t.Helper()
	p := evaluation.Pair{Old: testcrd.MustCRD(t, oldYAML), New: testcrd.MustCRD(t, newYAML)}
	p.Old.ResourceVersion = "42"
	p.Send = sent(t, p.New)
	p.Send.SetResourceVersion("42")
	return p
}

// createPair is the create of a new CRD, to be dry-run.
func createPair(t *testing.T, yaml string) evaluation.Pair {
	t.Helper()
	p := evaluation.Pair{New: testcrd.MustCRD(t, yaml)}
	p.Send = sent(t, p.New)
	return p
}

// run runs the plan against cluster with the settings raw, as a deploy
// does, and returns the deploy's error (report.DeployError).
func run(t *testing.T, plan evaluation.Plan, cluster *evaluationtest.Cluster, raw map[string]any) error {
	t.Helper()
	cfg, err := config.Decode(raw)
	require.NoError(t, err)
	res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
		Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return &report.DeployError{Err: err, Report: report.New(nil, res.Findings, cfg.MaxFindingsPerCRD, nil)}
	}
	return nil
}

// TestRunDryRunRefusals: how the apiserver's answer to the server-side dry
// run of a change becomes an apiserverRejects finding or, when the dry run
// cannot tell, the run's error.
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
		{name: "403 from a webhook: the status message", err: evaluationtest.WebhookDenial(),
			finding: "crd " + crd + `: [apiserverRejects] the apiserver refuses the update (server-side dry run): admission webhook "crds.example.com" denied the request: not today`},
		{name: "422 from a policy", err: evaluationtest.PolicyDenial(crd),
			finding: "crd " + crd + `: [apiserverRejects] the apiserver refuses the update (server-side dry run): ` +
				`customresourcedefinitions.apiextensions.k8s.io "` + crd + `" is forbidden: ValidatingAdmissionPolicy 'freeze'`},
		{name: "400 from a webhook with its own code", err: status(400, "", `admission webhook "x" denied the request: no`),
			finding: `[apiserverRejects] the apiserver refuses the update (server-side dry run): admission webhook "x" denied the request: no`},
		{name: "create refused", newGadget: true, err: evaluationtest.WebhookDenial(),
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
			key, plan := "update "+crd, evaluation.Plan{Pairs: []evaluation.Pair{updatePair(t, testcrd.OldCRD, testcrd.SafeCRD)}}
			if tc.newGadget {
				key = "create gadgets.example.com"
				plan.Pairs = append(plan.Pairs, createPair(t, gadgetCRD))
			}
			cluster := &evaluationtest.Cluster{DryRunErr: map[string]error{key: tc.err}}
			err := run(t, plan, cluster, nil)
			if tc.runErr != "" {
				require.ErrorContains(t, err, tc.runErr)
				require.NotErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
				return
			}
			var unsafe *report.DeployError
			require.ErrorAs(t, err, &unsafe)
			require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
			require.Len(t, unsafe.Lines(), 1, "%q", unsafe.Lines())
			require.Contains(t, unsafe.Lines()[0], tc.finding)
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
		update := updatePair(t, testcrd.OldCRD, testcrd.SafeCRD)
		cluster.CRDs = map[string]*apiextv1.CustomResourceDefinition{update.Old.Name: update.Old}
		return run(t, evaluation.Plan{Pairs: []evaluation.Pair{update, createPair(t, badSchema)}}, cluster, raw)
	}

	t.Run("one of several refused", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Validates: true}
		err := deploy(t, cluster, nil)
		var unsafe *evaluation.UnsafeUpgradeError
		require.ErrorAs(t, err, &unsafe)
		var deployErr *report.DeployError
		require.ErrorAs(t, err, &deployErr)
		require.Len(t, unsafe.Findings, 1, "%q", deployErr.Lines())
		require.Equal(t, "crd gadgets.example.com field spec.versions[*].schema.openAPIV3Schema.properties[spec].additionalProperties: "+
			"[apiserverRejects] the apiserver refuses the create (server-side dry run): Forbidden: additionalProperties and properties are mutual exclusive [fp:5d0ad33505fb]"+
			"\n    way forward: fix what the apiserver names: Forbidden: additionalProperties and properties are mutual exclusive",
			deployErr.Lines()[0])
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

// TestRunDryRunLeavesOurWebhooksWarnings: the warnings the CRDUpgradeSafety
// webhook gives on the dry run repeat the check's own findings; the other
// warnings of the apiserver are reported.
func TestRunDryRunLeavesOurWebhooksWarnings(t *testing.T) {
	cluster := &evaluationtest.Cluster{DryRunWarnings: []string{
		"CRDUpgradeSafety: version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5 (exempted: waive annotation: r)",
		"another webhook: careful",
	}}
	cfg := config.Default()
	res, err := evaluation.Run(context.Background(), evaluation.Request{Settings: &cfg,
		Plan:    evaluation.Plan{Pairs: []evaluation.Pair{updatePair(t, testcrd.OldCRD, testcrd.SafeCRD)}},
		Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
	require.NoError(t, err)
	require.Len(t, res.Findings, 1)
	require.Equal(t, "crd widgets.example.com: [apiserverRejects] the apiserver warns on the update (server-side dry run): another webhook: careful [fp:609b238b16ec]",
		report.FindingLine(res.Findings[0]))
}

// TestReplaceCountFailsClosed: a replace whose custom resources cannot
// be counted fails the check, naming the CRD.
func TestReplaceCountFailsClosed(t *testing.T) {
	cluster := &evaluationtest.Cluster{Err: errors.New("connection refused")}
	pair := updatePair(t, testcrd.OldCRD, testcrd.SafeCRD)
	pair.Strategy = evaluation.StrategyAlwaysReplace
	err := run(t, evaluation.Plan{Pairs: []evaluation.Pair{pair}}, cluster, nil)
	require.ErrorContains(t, err, "checking replace of CRD widgets.example.com: connection refused")
	require.NotErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
}
