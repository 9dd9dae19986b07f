package preflight

import (
	"context"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
)

// TestRunWaiver: a CRD deployed with the waiver annotations has the
// findings of the checks they name waived, as an exemption would (a
// warning that names the reason); the others still block. The same CRD
// with an invalid waiver fails the deploy, and deleting a CRD whose live
// object waives crdDeletion is blocked: only an acceptDataLoss entry of
// the settings accepts the loss.
func TestRunWaiver(t *testing.T) {
	waived := func(checks, reason string) ctlres.Resource {
		r := res(t, unsafeCRD)
		r.UnstructuredObject()["metadata"].(map[string]any)["annotations"] = map[string]any{
			config.WaiveAnnotation: checks, config.WaiveReasonAnnotation: reason}
		return r
	}
	run := func(newRs ...ctlres.Resource) (string, error) {
		cluster := &evaluationtest.Cluster{CRDs: evaluationtest.CRDsNamed(nil, nil), Count: 3}
		check, out := newCheck(t, cluster, nil)
		err := check.Run(context.Background(), deployGraph(t, "", []ctlres.Resource{live(t, oldCRD)}, newRs))
		return out.String(), err
	}

	out, err := run(waived("enum, minimum", "values renamed in PR 123"))
	require.NoError(t, err)
	require.Equal(t, []string{
		`Warning: CRDUpgradeSafety: crd widgets.example.com version v1 field ^.spec.color: [enum] enum values removed: ["blue"]: no stored Widgets to affect (exempted: waive annotation: values renamed in PR 123) [fp:ed63ac23ebcd]`,
		`Warning: CRDUpgradeSafety: crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5: no stored Widgets to affect (exempted: waive annotation: values renamed in PR 123) [fp:c25b6326ccb9]`,
	}, strings.Split(strings.TrimSpace(out), "\n"))

	out, err = run(waived("enum", "values renamed in PR 123"))
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Contains(t, err.Error(), "[minimum] minimum increased: 1 -> 5")
	require.NotContains(t, err.Error(), "[enum]")
	require.Contains(t, out, "[enum] enum values removed")

	_, err = run(waived("enum,pattern,typo", "values renamed in PR 123"))
	require.ErrorIs(t, err, config.ErrInvalidWaiver)
	require.ErrorContains(t, err, `CRD widgets.example.com: invalid waiver annotation: crd-upgrade-safety.kapp.k14s.io/waive: unknown check ID "typo"`)

	// A deploy that deletes the CRD: the live object's waiver annotation
	// does not waive the loss of its objects; an acceptDataLoss entry of
	// the settings that names it, for as many objects, does.
	liveWaived := live(t, oldCRD)
	liveWaived.UnstructuredObject()["metadata"].(map[string]any)["annotations"] = map[string]any{
		config.WaiveAnnotation: "crdDeletion", config.WaiveReasonAnnotation: "data migrated to gadgets"}
	deleteWith := func(raw map[string]any) (string, error) {
		check, buf := newCheck(t, &evaluationtest.Cluster{Count: 3}, raw)
		err := check.Run(context.Background(), deployGraph(t, "", []ctlres.Resource{liveWaived}, nil))
		return strings.TrimSpace(buf.String()), err
	}
	_, err = deleteWith(nil)
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.ErrorContains(t, err, "(not exempted: a waiver annotation cannot waive a loss of stored data")
	accept := func(objects int) map[string]any {
		return map[string]any{"acceptDataLoss": []any{map[string]any{"crd": "widgets.example.com", "check": "crdDeletion",
			"objects": objects, "reason": "data migrated to gadgets", "expires": "2099-12-31"}}}
	}
	out, err = deleteWith(accept(3))
	require.NoError(t, err)
	require.Equal(t, "Warning: CRDUpgradeSafety: crd widgets.example.com: [crdDeletion] data loss: deleting the CRD would delete its 3 existing custom resources "+
		"(not exempted: a waiver annotation cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it; it read: waive annotation: data migrated to gadgets) "+
		"(data loss accepted: data migrated to gadgets; at most 3 objects; until 2099-12-31) [fp:7abd660cb35a]", out)
	_, err = deleteWith(accept(2))
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.ErrorContains(t, err, "not accepted: the loss affects 3 objects, more than the 2 accepted")
}
