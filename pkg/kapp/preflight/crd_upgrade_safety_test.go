package preflight

import (
	"bytes"
	"context"
	"errors"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"strings"
	"testing"

	ctlconf "carvel.dev/kapp/pkg/kapp/config"
	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	"carvel.dev/kapp/pkg/kapp/logger"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

var (
	oldCRD    = testcrd.OldCRD
	unsafeCRD = testcrd.UnsafeCRD // enum value removed, minimum increased
	safeCRD   = testcrd.SafeCRD
)

func res(t testing.TB, yaml string) ctlres.Resource {
	t.Helper()
	r, err := ctlres.NewResourceFromBytes([]byte(yaml))
	require.NoError(t, err)
	return r
}

// change is a kapp ActualChange as kapp's cluster changes provide it,
// including the live object kapp fetched for its diff.
type change struct {
	res, orig ctlres.Resource
	op        ctldgraph.ActualChangeOp
}

func (c change) Resource() ctlres.Resource                { return c.res }
func (c change) Op() ctldgraph.ActualChangeOp             { return c.op }
func (c change) ClusterOriginalResource() ctlres.Resource { return c.orig }

// bareChange is an ActualChange without the live object.
type bareChange struct {
	res ctlres.Resource
	op  ctldgraph.ActualChangeOp
}

func (c bareChange) Resource() ctlres.Resource    { return c.res }
func (c bareChange) Op() ctldgraph.ActualChangeOp { return c.op }

func graph(t *testing.T, changes ...ctldgraph.ActualChange) *ctldgraph.ChangeGraph {
	t.Helper()
	g, err := ctldgraph.NewChangeGraph(changes, nil, nil, logger.NewNoopLogger())
	require.NoError(t, err)
	return g
}

// newCheck returns an enabled check printing to out, configured by raw.
func newCheck(t *testing.T, cluster *evaluationtest.Cluster, raw map[string]any) (*CRDUpgradeSafety, *bytes.Buffer) {
	t.Helper()
	out := &bytes.Buffer{}
	check := NewCRDUpgradeSafety(ui.NewWriterUI(out, out, ui.NewNoopLogger()), func() (evaluation.Cluster, error) {
		if cluster == nil {
			return nil, errors.New("test: no cluster expected")
		}
		cluster.Contacts++
		return cluster, nil
	}, true)
	require.NoError(t, check.SetConfig(raw))
	return check, out
}

func TestRunCreate(t *testing.T) {
	// A new CRD has nothing to compare: it is only validated, offline and
	// by a server-side dry run of its create.
	cluster := &evaluationtest.Cluster{}
	check, out := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.NoError(t, err)
	require.Empty(t, out.String())
	require.Equal(t, []string{"create widgets.example.com"}, cluster.DryRunVerbs())
	require.Empty(t, cluster.Lists)
	require.Empty(t, cluster.Counts)
}

func TestRunCreateMustDecode(t *testing.T) {
	check, _ := newCheck(t, nil, nil)
	bad := strings.Replace(unsafeCRD, "versions:", "versions: v1\n  x:", 1)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, bad), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorContains(t, err, "decoding CRD widgets.example.com")
}

func TestRunUpdateError(t *testing.T) {
	cluster := &evaluationtest.Cluster{Objs: []map[string]any{{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": int64(7), "color": "blue"},
	}}}
	check, out := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert},
		change{res: res(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"),
			op: ctldgraph.ActualChangeOpUpsert}))

	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	var unsafe *evaluation.UnsafeUpgradeError
	require.ErrorAs(t, err, &unsafe)
	var checks []string
	for _, f := range unsafe.Findings {
		checks = append(checks, f.Version+" "+string(f.Field)+" "+f.Check)
	}
	// The stored object's impact is joined to the findings that cause it.
	require.Equal(t, []string{"v1 ^.spec.color enum", "v1 ^.spec.size minimum"}, checks)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, "unsafe CRD upgrade: 2 error findings:", lines[0])
	require.Len(t, lines, 5, "each finding, then its way forward")
	require.True(t, strings.HasPrefix(lines[1], "  crd widgets.example.com version v1 field ^.spec.color: [enum] "), lines[1])
	require.Contains(t, lines[1], `1 of 1 stored Widget rejected: default/w1 (Unsupported value: "blue"`)
	require.Contains(t, lines[2], "    way forward: fix the stored objects that fail the new constraint first (default/w1)")
	require.Contains(t, lines[3], "[minimum] minimum increased: 1 -> 5: none of 1 stored Widget affected")
	require.Empty(t, out.String(), "errors are reported in the error, not printed")
	require.Equal(t, []string{"widgets.example.com v1"}, cluster.Lists, "existing resources listed at the old served version")
	require.Empty(t, cluster.Gets, "live CRD taken from kapp's change, not fetched again")
}

func TestRunUpdateWarn(t *testing.T) {
	check, out := newCheck(t, &evaluationtest.Cluster{}, map[string]any{"mode": "warn"})
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(lines[0],
		"Warning: CRDUpgradeSafety: crd widgets.example.com version v1 field ^.spec.color: [enum] "), lines[0])
	require.True(t, strings.HasPrefix(lines[1],
		"Warning: CRDUpgradeSafety: crd widgets.example.com version v1 field ^.spec.size: [minimum] "), lines[1])
}

func TestRunUpdateSafe(t *testing.T) {
	cluster := &evaluationtest.Cluster{}
	check, out := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, safeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.NoError(t, err)
	require.Empty(t, out.String())
}

func TestRunNoopIsSkipped(t *testing.T) {
	check, _ := newCheck(t, nil, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpNoop}))
	require.NoError(t, err)
}

func TestRunClusterOnlyWhenNeeded(t *testing.T) {
	// existingResources and apiserverRejects (its dry run) off and no
	// deletion: the offline comparison needs nothing from the cluster.
	cluster := &evaluationtest.Cluster{}
	check, _ := newCheck(t, cluster, map[string]any{
		"checks": map[string]any{"crd": map[string]any{
			"existingResources": map[string]any{"enabled": false},
			"apiserverRejects":  map[string]any{"enabled": false},
		}},
	})
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Zero(t, cluster.Contacts)
}

func TestRunBound(t *testing.T) {
	check, _ := newCheck(t, &evaluationtest.Cluster{}, map[string]any{"maxFindingsPerCRD": 1})
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, "unsafe CRD upgrade: 2 error findings:", lines[0])
	require.Equal(t, "  ... and 1 more finding for CRD widgets.example.com", lines[len(lines)-1])
	require.Len(t, lines, 4, "the finding kept, its way forward, the note")
}

func TestRunFallbackFetchesLiveCRDsInOneBatch(t *testing.T) {
	old, err := CRDFromResource(res(t, oldCRD))
	require.NoError(t, err)
	cluster := &evaluationtest.Cluster{CRDs: map[string]*apiextv1.CustomResourceDefinition{old.Name: old}}
	check, _ := newCheck(t, cluster, nil)
	gadget := strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(unsafeCRD)
	err = check.Run(context.Background(), graph(t,
		bareChange{res: res(t, unsafeCRD), op: ctldgraph.ActualChangeOpUpsert},
		bareChange{res: res(t, gadget), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Len(t, cluster.Gets, 1)
	require.ElementsMatch(t, []string{"widgets.example.com", "gadgets.example.com"}, cluster.Gets[0])
	var unsafe *evaluation.UnsafeUpgradeError
	require.ErrorAs(t, err, &unsafe)
	for _, f := range unsafe.Findings {
		require.Equal(t, "widgets.example.com", f.CRD, "gadgets is new: nothing to compare")
	}
}

func TestRunDeletion(t *testing.T) {
	widget := func(name string) ctldgraph.ActualChange {
		return change{res: res(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: "+name+", namespace: default}\n"),
			op: ctldgraph.ActualChangeOpDelete}
	}
	crdDelete := change{res: res(t, oldCRD), op: ctldgraph.ActualChangeOpDelete}

	t.Run("custom resources left behind", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Count: 3}
		check, _ := newCheck(t, cluster, nil)
		err := check.Run(context.Background(), graph(t, crdDelete, widget("a")))
		require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
		var unsafe *evaluation.UnsafeUpgradeError
		require.ErrorAs(t, err, &unsafe)
		require.Len(t, unsafe.Findings, 1)
		require.Equal(t, config.CheckCRDDeletion, unsafe.Findings[0].Check)
		require.Contains(t, report.Message(unsafe.Findings[0]), "2", "the one deleted by the same change set is not lost")
		require.Equal(t, []string{"widgets.example.com"}, cluster.Counts)
	})

	t.Run("all custom resources deleted by the same change set", func(t *testing.T) {
		check, _ := newCheck(t, &evaluationtest.Cluster{Count: 2}, nil)
		require.NoError(t, check.Run(context.Background(), graph(t, crdDelete, widget("a"), widget("b"))))
	})

	t.Run("disabled", func(t *testing.T) {
		cluster := &evaluationtest.Cluster{Count: 3}
		check, _ := newCheck(t, cluster, map[string]any{
			"checks": map[string]any{"crd": map[string]any{"crdDeletion": map[string]any{"enabled": false}}},
		})
		require.NoError(t, check.Run(context.Background(), graph(t, crdDelete)))
		require.Zero(t, cluster.Contacts)
	})
}

func TestRunAPIErrorFailsClosed(t *testing.T) {
	check, _ := newCheck(t, &evaluationtest.Cluster{Err: errors.New("the server is currently unable to handle the request")}, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, safeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.Error(t, err)
	require.NotErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Contains(t, err.Error(), "widgets.example.com")
	require.Contains(t, err.Error(), "unable to handle the request")

	check, _ = newCheck(t, &evaluationtest.Cluster{Err: errors.New("forbidden")}, nil)
	err = check.Run(context.Background(), graph(t, change{res: res(t, oldCRD), op: ctldgraph.ActualChangeOpDelete}))
	require.ErrorContains(t, err, "checking deletion of CRD widgets.example.com: forbidden")
}

func TestSetConfig(t *testing.T) {
	check := NewCRDUpgradeSafety(ui.NewNoopUI(), nil, false)
	require.NoError(t, check.SetConfig(map[string]any{"mode": "warn"}))
	require.Equal(t, config.ModeWarn, check.Config().Mode)
	require.NoError(t, check.SetConfig(nil), "nil: enabled by --preflight only")
	require.Equal(t, config.Default(), check.Config())

	err := check.SetConfig(map[string]any{"mode": "sometimes"})
	require.ErrorIs(t, err, config.ErrInvalidConfig)
}

func TestRegistryConfigErrorSurfaces(t *testing.T) {
	check := NewCRDUpgradeSafety(ui.NewNoopUI(), nil, false)
	registry := NewRegistryWith(nil, check)
	rs, err := ctlres.NewFileResource(ctlres.NewBytesSource([]byte(`
apiVersion: kapp.k14s.io/v1alpha1
kind: Config
preflightRules:
- name: CRDUpgradeSafety
  config: {mode: sometimes}
`))).Resources()
	require.NoError(t, err)
	_, conf, err := ctlconf.NewConfFromResources(rs)
	require.NoError(t, err)

	err = registry.SetConfig(conf.PreflightRules())
	require.ErrorIs(t, err, config.ErrInvalidConfig)
	require.True(t, strings.HasPrefix(err.Error(), `setting preflight config "CRDUpgradeSafety": mode: `), err.Error())
	require.True(t, check.Enabled(), "a preflightRules entry enables the check")
}

func TestRegistryKnowsBothChecks(t *testing.T) {
	registry := NewRegistry(nil, ui.NewNoopUI())
	require.NoError(t, registry.Set("PermissionValidation,CRDUpgradeSafety"))
	require.ErrorContains(t, registry.Set("CRDUpgradeSafty"), "unknown preflight check")
}
