package preflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	ctlconf "carvel.dev/kapp/pkg/kapp/config"
	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	"carvel.dev/kapp/pkg/kapp/logger"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crdYAML is a Widget CRD whose spec.color enum and spec.size minimum vary.
func crdYAML(enum string, minimum int) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: %d}
              color: {type: string, enum: [%s]}
status:
  storedVersions: [v1]
`, minimum, enum)
}

var (
	oldCRD    = crdYAML("red, green, blue", 1)
	unsafeCRD = crdYAML("red, green", 5) // enum value removed, minimum increased
	safeCRD   = crdYAML("red, green, blue, yellow", 1)
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

// fakeCluster records what the check asks of the cluster.
type fakeCluster struct {
	mu       sync.Mutex
	crds     map[string]*apiextv1.CustomResourceDefinition
	objs     []map[string]any
	count    int
	err      error
	gets     [][]string
	lists    []string
	counts   []string
	contacts int

	// dryRunErr answers dry runs by "verb name" ("update widgets.example.com").
	dryRunErr map[string]error
	dryRuns   []dryRun
	// validates: the other dry runs of creates and updates are validated as
	// the apiserver validates them, with its own library (an update against
	// the CRD of that name in crds), and refused as it refuses them.
	validates bool
}

type dryRun struct {
	verb Verb
	obj  *unstructured.Unstructured
}

func (f *fakeCluster) DryRun(_ context.Context, verb Verb, obj *unstructured.Unstructured) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dryRuns = append(f.dryRuns, dryRun{verb: verb, obj: obj.DeepCopy()})
	if err := f.dryRunErr[string(verb)+" "+obj.GetName()]; err != nil || !f.validates || verb == VerbDelete {
		return err
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	prepared := crdupgradesafety.PrepareCRD(crd)
	errs := prepared.Create(context.Background())
	if verb == VerbUpdate {
		errs = prepared.Update(context.Background(), crdupgradesafety.PrepareCRD(f.crds[crd.Name]))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: apiextv1.GroupName, Kind: "CustomResourceDefinition"}, crd.Name, errs)
}

// dryRunVerbs returns "verb name" of every dry run, sorted.
func (f *fakeCluster) dryRunVerbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []string{}
	for _, d := range f.dryRuns {
		out = append(out, string(d.verb)+" "+d.obj.GetName())
	}
	sort.Strings(out)
	return out
}

func (f *fakeCluster) GetCRDs(_ context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, names)
	if f.err != nil {
		return nil, f.err
	}
	return crdsNamed(f.crds, names), nil
}

func (f *fakeCluster) ListCustomResources(_ context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func([]map[string]any) error) error {
	f.mu.Lock()
	f.lists = append(f.lists, crd.Name+" "+version)
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return fn(f.objs)
}

func (f *fakeCluster) CountCustomResources(_ context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts = append(f.counts, crd.Name)
	return f.count, f.err
}

// newCheck returns an enabled check printing to out, configured by raw.
func newCheck(t *testing.T, cluster *fakeCluster, raw map[string]any) (*CRDUpgradeSafety, *bytes.Buffer) {
	t.Helper()
	out := &bytes.Buffer{}
	check := NewCRDUpgradeSafety(ui.NewWriterUI(out, out, ui.NewNoopLogger()), func() (Cluster, error) {
		if cluster == nil {
			return nil, errors.New("test: no cluster expected")
		}
		cluster.contacts++
		return cluster, nil
	}, true)
	require.NoError(t, check.SetConfig(raw))
	return check, out
}

func TestRunCreate(t *testing.T) {
	// A new CRD has nothing to compare: it is only validated, offline and
	// by a server-side dry run of its create.
	cluster := &fakeCluster{}
	check, out := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.NoError(t, err)
	require.Empty(t, out.String())
	require.Equal(t, []string{"create widgets.example.com"}, cluster.dryRunVerbs())
	require.Empty(t, cluster.lists)
	require.Empty(t, cluster.counts)
}

func TestRunCreateMustDecode(t *testing.T) {
	check, _ := newCheck(t, nil, nil)
	bad := strings.Replace(unsafeCRD, "versions:", "versions: v1\n  x:", 1)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, bad), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorContains(t, err, "decoding CRD widgets.example.com")
}

func TestRunUpdateError(t *testing.T) {
	cluster := &fakeCluster{objs: []map[string]any{{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": int64(7), "color": "blue"},
	}}}
	check, out := newCheck(t, cluster, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert},
		change{res: res(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"),
			op: ctldgraph.ActualChangeOpUpsert}))

	require.ErrorIs(t, err, ErrUnsafeUpgrade)
	var unsafe *UnsafeUpgradeError
	require.ErrorAs(t, err, &unsafe)
	var checks []string
	for _, f := range unsafe.Findings {
		checks = append(checks, f.Version+" "+f.Field+" "+f.Check)
	}
	require.Equal(t, []string{"v1  existingResources", "v1 ^.spec.color enum", "v1 ^.spec.size minimum"}, checks)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, "unsafe CRD upgrade: 3 error findings:", lines[0])
	require.Len(t, lines, 4)
	require.True(t, strings.HasPrefix(lines[2], "  crd widgets.example.com version v1 field ^.spec.color: [enum] "), lines[2])
	require.Empty(t, out.String(), "errors are reported in the error, not printed")
	require.Equal(t, []string{"widgets.example.com v1"}, cluster.lists, "existing resources listed at the old served version")
	require.Empty(t, cluster.gets, "live CRD taken from kapp's change, not fetched again")
}

func TestRunUpdateWarn(t *testing.T) {
	check, out := newCheck(t, &fakeCluster{}, map[string]any{"mode": "warn"})
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
	cluster := &fakeCluster{}
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
	cluster := &fakeCluster{}
	check, _ := newCheck(t, cluster, map[string]any{
		"checks": map[string]any{"crd": map[string]any{
			"existingResources": map[string]any{"enabled": false},
			"apiserverRejects":  map[string]any{"enabled": false},
		}},
	})
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorIs(t, err, ErrUnsafeUpgrade)
	require.Zero(t, cluster.contacts)
}

func TestRunBound(t *testing.T) {
	check, _ := newCheck(t, &fakeCluster{}, map[string]any{"maxFindingsPerCRD": 1})
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, unsafeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorIs(t, err, ErrUnsafeUpgrade)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, "unsafe CRD upgrade: 2 error findings:", lines[0])
	require.Equal(t, "  ... and 1 more finding for CRD widgets.example.com", lines[len(lines)-1])
	require.Len(t, lines, 3)
}

func TestRunFallbackFetchesLiveCRDsInOneBatch(t *testing.T) {
	old, err := CRDFromResource(res(t, oldCRD))
	require.NoError(t, err)
	cluster := &fakeCluster{crds: map[string]*apiextv1.CustomResourceDefinition{old.Name: old}}
	check, _ := newCheck(t, cluster, nil)
	gadget := strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(unsafeCRD)
	err = check.Run(context.Background(), graph(t,
		bareChange{res: res(t, unsafeCRD), op: ctldgraph.ActualChangeOpUpsert},
		bareChange{res: res(t, gadget), op: ctldgraph.ActualChangeOpUpsert}))
	require.ErrorIs(t, err, ErrUnsafeUpgrade)
	require.Len(t, cluster.gets, 1)
	require.ElementsMatch(t, []string{"widgets.example.com", "gadgets.example.com"}, cluster.gets[0])
	var unsafe *UnsafeUpgradeError
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
		cluster := &fakeCluster{count: 3}
		check, _ := newCheck(t, cluster, nil)
		err := check.Run(context.Background(), graph(t, crdDelete, widget("a")))
		require.ErrorIs(t, err, ErrUnsafeUpgrade)
		var unsafe *UnsafeUpgradeError
		require.ErrorAs(t, err, &unsafe)
		require.Len(t, unsafe.Findings, 1)
		require.Equal(t, config.CheckCRDDeletion, unsafe.Findings[0].Check)
		require.Contains(t, unsafe.Findings[0].Message, "2", "the one deleted by the same change set is not lost")
		require.Equal(t, []string{"widgets.example.com"}, cluster.counts)
	})

	t.Run("all custom resources deleted by the same change set", func(t *testing.T) {
		check, _ := newCheck(t, &fakeCluster{count: 2}, nil)
		require.NoError(t, check.Run(context.Background(), graph(t, crdDelete, widget("a"), widget("b"))))
	})

	t.Run("disabled", func(t *testing.T) {
		cluster := &fakeCluster{count: 3}
		check, _ := newCheck(t, cluster, map[string]any{
			"checks": map[string]any{"crd": map[string]any{"crdDeletion": map[string]any{"enabled": false}}},
		})
		require.NoError(t, check.Run(context.Background(), graph(t, crdDelete)))
		require.Zero(t, cluster.contacts)
	})
}

func TestRunAPIErrorFailsClosed(t *testing.T) {
	check, _ := newCheck(t, &fakeCluster{err: errors.New("the server is currently unable to handle the request")}, nil)
	err := check.Run(context.Background(), graph(t,
		change{res: res(t, safeCRD), orig: res(t, oldCRD), op: ctldgraph.ActualChangeOpUpsert}))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrUnsafeUpgrade)
	require.Contains(t, err.Error(), "widgets.example.com")
	require.Contains(t, err.Error(), "unable to handle the request")

	check, _ = newCheck(t, &fakeCluster{err: errors.New("forbidden")}, nil)
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
