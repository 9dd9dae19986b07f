package preflight

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// orderingExample is examples/conversion-ordering: two releases of an
// operator and its CRD, and the kapp Config that orders them.
const orderingExample = "../../../examples/conversion-ordering"

const (
	gizmoCRD       = "gizmos.ordering.example.com"
	gizmoGroup     = OrderingGroupPrefix + gizmoCRD
	gizmoOperator  = "Deployment gizmo-system/gizmo-operator"
	groupKey       = "kapp.k14s.io/change-group"
	ruleKey        = "kapp.k14s.io/change-rule"
	gizmoRuleValue = "upsert after upserting " + gizmoGroup
)

// exampleResources reads the resources of a file of orderingExample (every
// YAML document), as the apiserver holds them when live is set.
func exampleResources(t *testing.T, file string, live bool) []ctlres.Resource {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(orderingExample, file))
	require.NoError(t, err)
	rs, err := ctlres.NewFileResource(ctlres.NewBytesSource(data)).Resources()
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	if live {
		for i, r := range rs {
			bs, err := r.AsYAMLBytes()
			require.NoError(t, err)
			rs[i] = liveRes(t, string(bs))
		}
	}
	return rs
}

// liveRes is live (the object the apiserver holds) for a manifest whose
// CRD may store another version than v1: its storedVersions are its
// storage version's.
func liveRes(t *testing.T, yaml string) ctlres.Resource {
	t.Helper()
	r := live(t, yaml)
	if IsCRD(r) {
		crd, err := CRDFromResource(r)
		require.NoError(t, err)
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				r.UnstructuredObject()["status"].(map[string]any)["storedVersions"] = []any{v.Name}
			}
		}
	}
	return r
}

// edit applies fn to the object of the resources of kind (and name, when
// given) among rs.
func edit(rs []ctlres.Resource, kind, name string, fn func(obj map[string]any)) []ctlres.Resource {
	for _, r := range rs {
		if r.Kind() == kind && (name == "" || r.Name() == name) {
			fn(r.UnstructuredObject())
		}
	}
	return rs
}

func annotate(key, value string) func(map[string]any) {
	return func(obj map[string]any) {
		meta := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann[key] = value
		meta["annotations"] = ann
	}
}

// withoutKind drops the resources of kind.
func withoutKind(rs []ctlres.Resource, kind string) []ctlres.Resource {
	var out []ctlres.Resource
	for _, r := range rs {
		if r.Kind() != kind {
			out = append(out, r)
		}
	}
	return out
}

func concat(rss ...[]ctlres.Resource) []ctlres.Resource {
	var out []ctlres.Resource
	for _, rs := range rss {
		out = append(out, rs...)
	}
	return out
}

// TestConversionOrdering: the conversionOrdering check of the kapp hook on
// change graphs built by kapp's own code (deployGraph) from the releases of
// examples/conversion-ordering: a CRD update that needs its conversion
// webhook's new code is an error unless kapp's graph makes the CRD's change
// wait for every workload of the change set that serves the webhook.
func TestConversionOrdering(t *testing.T) {
	crd1 := func() []ctlres.Resource { return exampleResources(t, "release-1/crd.yaml", true) }
	op1 := func() []ctlres.Resource { return exampleResources(t, "release-1/operator.yaml", true) }
	crd2 := func() []ctlres.Resource { return exampleResources(t, "release-2/crd.yaml", false) }
	op2 := func() []ctlres.Resource { return exampleResources(t, "release-2/operator.yaml", false) }
	cfg := func() []ctlres.Resource { return exampleResources(t, "config.yaml", false) }
	crd2Live := func() []ctlres.Resource { return exampleResources(t, "release-2/crd.yaml", true) }
	disabled := map[string]any{"checks": map[string]any{"crd": map[string]any{"conversionOrdering": map[string]any{"enabled": false}}}}
	groupAnn := `on Deployment gizmo-system/gizmo-operator: kapp.k14s.io/change-group: "` + gizmoGroup + `"`
	ruleAnn := `on the CRD: kapp.k14s.io/change-rule: "` + gizmoRuleValue + `"`

	cases := []struct {
		name          string
		existing, new []ctlres.Resource
		config        map[string]any
		errors        []string // substrings of the one error finding's line, in order
		warnings      []string // substrings of the one printed line
		// waits: kapp's graph (the oracle) makes the CRD's change wait for
		// the operator's Deployment.
		waits bool
		// reads: the Services read from the cluster (nil: not asserted).
		reads []string
	}{
		{name: "not ordered: the CRD may change before the new operator runs (the unchanged Service read from the cluster)",
			existing: concat(crd1(), op1()), new: concat(crd2(), op2()), reads: []string{"gizmo-system/gizmo-webhook"},
			errors: []string{"crd " + gizmoCRD + ": [conversionOrdering] the conversion webhook configuration changes: the conversion webhook's Service gizmo-system/gizmo-webhook is served by " +
				gizmoOperator + ", which the change set rolls out, but kapp may update the CRD before it is rolled out",
				"way forward: make kapp roll out the webhook's new code and wait for it before the CRD changes: add the annotations " +
					groupAnn + "; " + ruleAnn + " (or, for the whole app, a kapp Config", "examples/conversion-ordering"}},
		{name: "ordered by the annotations of the remedy",
			existing: concat(crd1(), op1()),
			new: concat(edit(crd2(), "CustomResourceDefinition", "", annotate(ruleKey, gizmoRuleValue)),
				edit(op2(), "Deployment", "", annotate(groupKey, gizmoGroup))),
			waits: true},
		{name: "ordered by the example's kapp Config",
			existing: concat(crd1(), op1()), new: concat(crd2(), op2(), cfg()), waits: true},
		{name: "the group annotation alone does not order",
			existing: concat(crd1(), op1()), new: concat(crd2(), edit(op2(), "Deployment", "", annotate(groupKey, gizmoGroup))),
			errors: []string{"[conversionOrdering]", "add the annotations " + ruleAnn + " (or"}},
		{name: "the rule alone does not order",
			existing: concat(crd1(), op1()), new: concat(edit(crd2(), "CustomResourceDefinition", "", annotate(ruleKey, gizmoRuleValue)), op2()),
			errors: []string{"[conversionOrdering]", "add the annotations " + groupAnn + " (or"}},
		{name: "a workload with a change group of its own gets a suffixed annotation",
			existing: concat(crd1(), op1()), new: concat(crd2(), edit(op2(), "Deployment", "", annotate(groupKey, "example.com/operators"))),
			errors: []string{"[conversionOrdering]", `on Deployment gizmo-system/gizmo-operator: kapp.k14s.io/change-group.conversion-webhook: "` + gizmoGroup + `"; ` + ruleAnn}},
		{name: "a second workload (a StatefulSet) serving the webhook, not ordered",
			existing: concat(crd1(), op1()),
			new: concat(edit(crd2(), "CustomResourceDefinition", "", annotate(ruleKey, gizmoRuleValue)),
				edit(op2(), "Deployment", "", annotate(groupKey, gizmoGroup)),
				[]ctlres.Resource{res(t, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: gizmo-cache, namespace: gizmo-system}
spec:
  serviceName: gizmo-cache
  selector: {matchLabels: {app.kubernetes.io/name: gizmo-operator}}
  template:
    metadata: {labels: {app.kubernetes.io/name: gizmo-operator, role: cache}}
    spec: {containers: [{name: cache, image: registry.example.com/gizmo-cache:2.0.0}]}
`)}),
			waits: true,
			errors: []string{"[conversionOrdering]", "is served by StatefulSet gizmo-system/gizmo-cache, which",
				`add the annotations on StatefulSet gizmo-system/gizmo-cache: kapp.k14s.io/change-group: "` + gizmoGroup + `" (or`}},
		{name: "url webhook: no workload to tie it to",
			existing: concat(crd1(), op1()),
			new: concat(edit(crd2(), "CustomResourceDefinition", "", func(obj map[string]any) {
				cc := obj["spec"].(map[string]any)["conversion"].(map[string]any)["webhook"].(map[string]any)["clientConfig"].(map[string]any)
				delete(cc, "service")
				cc["url"] = "https://gizmo-webhook.example.com/convert"
			}), op2())},
		{name: "workload not in the change set (unchanged): the running code serves",
			existing: concat(crd1(), op1()), new: concat(crd2(), exampleResources(t, "release-1/operator.yaml", false))},
		{name: "Service selector matches no workload of the change set",
			existing: concat(crd1(), op1()),
			new: concat(crd2(), edit(op2(), "Service", "", func(obj map[string]any) {
				obj["spec"].(map[string]any)["selector"] = map[string]any{"app.kubernetes.io/name": "another-operator"}
			}))},
		{name: "workload in another namespace than the Service",
			existing: concat(crd1(), op1()),
			new: concat(crd2(), edit(op2(), "Deployment", "", func(obj map[string]any) {
				obj["metadata"].(map[string]any)["namespace"] = "elsewhere"
			}))},
		{name: "Service neither in the app nor on the cluster",
			existing: concat(crd1(), withoutKind(op1(), "Service")), new: concat(crd2(), withoutKind(op2(), "Service")),
			reads: []string{"gizmo-system/gizmo-webhook"}},
		{name: "Service changed in the change set: its new selector, not the cluster's",
			existing: concat(crd1(), op1()),
			new: concat(crd2(), edit(op2(), "Service", "", func(obj map[string]any) {
				obj["metadata"].(map[string]any)["labels"] = map[string]any{"release": "2"}
			})),
			errors: []string{"[conversionOrdering]", "Service gizmo-system/gizmo-webhook is served by " + gizmoOperator},
			reads:  []string{}},
		{name: "no workload in the Service's namespace changes: the cluster is not asked",
			existing: concat(crd1(), op1()), new: concat(crd2(), exampleResources(t, "release-1/operator.yaml", false)),
			reads: []string{}},
		{name: "a create stores nothing to convert yet",
			existing: nil, new: concat(crd2(), op2())},
		{name: "an update that needs no new code (a label)",
			existing: concat(crd2Live(), op1()),
			new: concat(edit(crd2(), "CustomResourceDefinition", "", func(obj map[string]any) {
				obj["metadata"].(map[string]any)["labels"] = map[string]any{"release": "2.1"}
			}), op2())},
		{name: "an update that changes a version's schema under the same webhook",
			existing: concat(crd2Live(), op1()),
			new: concat(edit(crd2(), "CustomResourceDefinition", "", func(obj map[string]any) {
				v2 := obj["spec"].(map[string]any)["versions"].([]any)[1].(map[string]any)
				props := v2["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)
				props["shade"] = map[string]any{"type": "string"}
			}), op2()),
			errors: []string{`[conversionOrdering] the schema of version "v2" changes: the conversion webhook's Service gizmo-system/gizmo-webhook is served by ` + gizmoOperator}},
		{name: "check disabled", config: disabled,
			existing: concat(crd1(), op1()), new: concat(crd2(), op2())},
		{name: "warn mode", config: map[string]any{"mode": "warn"},
			existing: concat(crd1(), op1()), new: concat(crd2(), op2()),
			warnings: []string{"Warning: CRDUpgradeSafety: crd " + gizmoCRD + ": [conversionOrdering] the conversion webhook configuration changes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			graph := deployGraph(t, "", tc.existing, tc.new)
			crdChange, deployment := changeOf(graph, "CustomResourceDefinition"), changeOf(graph, "Deployment")
			if tc.waits {
				require.NotNil(t, crdChange)
				require.NotNil(t, deployment)
				require.True(t, crdChange.IsTransitivelyWaitingFor(deployment), "kapp's graph: the CRD waits for the Deployment")
			} else if crdChange != nil && deployment != nil {
				require.False(t, crdChange.IsTransitivelyWaitingFor(deployment), "kapp's graph: the CRD does not wait for the Deployment")
			}

			crds := existingCRDs(t, tc.existing)
			cluster := &serviceCluster{Cluster: &evaluationtest.Cluster{Validates: true, CRDs: crds},
				services: existingServiceSelectors(t, tc.existing), reads: []string{}}
			out := &bytes.Buffer{}
			check := NewCRDUpgradeSafety(ui.NewWriterUI(out, out, ui.NewNoopLogger()),
				func() (evaluation.Cluster, error) { return cluster, nil }, true)
			require.NoError(t, check.SetConfig(tc.config))
			err := check.Run(context.Background(), graph)
			if tc.reads != nil {
				require.Equal(t, tc.reads, cluster.reads, "Services read from the cluster")
			}
			if len(tc.errors) == 0 {
				require.NoError(t, err)
			} else {
				var unsafe *report.DeployError
				require.ErrorAs(t, err, &unsafe)
				require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
				lines := unsafe.Lines()
				require.Len(t, lines, 1, "error findings: %q", lines)
				rest := lines[0]
				for _, want := range tc.errors {
					i := strings.Index(rest, want)
					require.GreaterOrEqual(t, i, 0, "%q\nnot in (what follows of) %q", want, lines[0])
					rest = rest[i+len(want):]
				}
			}
			lines := nonEmptyLines(out.String())
			require.Len(t, lines, len(tc.warnings), "printed: %q", lines)
			for i, want := range tc.warnings {
				require.Contains(t, lines[i], want)
			}
		})
	}
}

// serviceCluster is a test Cluster that reads Services (ServiceSelectorReader)
// and has crd-upgrade-safety's admission webhook installed
// (AdmissionWebhookFinder): an ordered update is judged at apply time.
type serviceCluster struct {
	*evaluationtest.Cluster
	services map[string]map[string]string // namespace/name: selector
	reads    []string
}

func (c *serviceCluster) ServiceSelector(_ context.Context, namespace, name string) (map[string]string, bool, error) {
	c.reads = append(c.reads, namespace+"/"+name)
	sel, ok := c.services[namespace+"/"+name]
	return sel, ok, nil
}

func (c *serviceCluster) CRDAdmissionWebhook(context.Context) (string, error) {
	return "crd-upgrade-safety", nil
}

// changeOf is the change of the graph's first resource of kind, nil when
// it has none.
func changeOf(graph *ctldgraph.ChangeGraph, kind string) *ctldgraph.Change {
	for _, c := range graph.All() {
		if c.Change.Resource().Kind() == kind {
			return c
		}
	}
	return nil
}

// TestConversionOrderingConfig: examples/conversion-ordering/config.yaml,
// given to kapp's own graph builder with kapp's default config, orders an
// app's workloads before its CRDs with a conversion webhook, and those
// before their custom resources (kapp's default rule), without a cycle
// (NewChangeGraph fails on one); a CRD without a webhook keeps kapp's
// default order.
func TestConversionOrderingConfig(t *testing.T) {
	gizmo := res(t, "apiVersion: ordering.example.com/v2\nkind: Gizmo\nmetadata: {name: g1, namespace: gizmo-system}\nspec: {color: blue}\n")
	cases := []struct {
		name string
		crd  []ctlres.Resource
		// waits: the CRD's change waits for the Deployment's.
		waits bool
	}{
		{name: "CRD with a conversion webhook", crd: exampleResources(t, "release-2/crd.yaml", false), waits: true},
		{name: "CRD without one", crd: edit(exampleResources(t, "release-1/crd.yaml", false), "CustomResourceDefinition", "", annotate("release", "1.1"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, existing := range [][]ctlres.Resource{nil, concat(exampleResources(t, "release-1/crd.yaml", true), exampleResources(t, "release-1/operator.yaml", true))} {
				graph := deployGraph(t, "", existing, concat(tc.crd, exampleResources(t, "release-2/operator.yaml", false),
					[]ctlres.Resource{gizmo.DeepCopy()}, exampleResources(t, "config.yaml", false)))
				crd, deployment, cr := changeOf(graph, "CustomResourceDefinition"), changeOf(graph, "Deployment"), changeOf(graph, "Gizmo")
				require.NotNil(t, deployment)
				require.NotNil(t, cr)
				require.True(t, cr.IsTransitivelyWaitingFor(crd), "kapp's default rule: custom resources after their CRD")
				require.Equal(t, tc.waits, crd.IsTransitivelyWaitingFor(deployment))
				require.False(t, deployment.IsTransitivelyWaitingFor(crd))

				linear, blocked := graph.Linearized()
				require.Empty(t, blocked)
				if tc.waits {
					require.Less(t, stepOf(linear, deployment), stepOf(linear, crd))
					require.Less(t, stepOf(linear, crd), stepOf(linear, cr))
				}
			}
		})
	}
}

// stepOf is the step of kapp's linearized graph that applies change.
func stepOf(linear [][]*ctldgraph.Change, change *ctldgraph.Change) int {
	for i, step := range linear {
		for _, c := range step {
			if c == change {
				return i
			}
		}
	}
	return -1
}

// existingCRDs returns the CRDs among the resources on the cluster before
// a deploy, by name: the live CRDs of a test's cluster.
func existingCRDs(t *testing.T, existing []ctlres.Resource) map[string]*apiextv1.CustomResourceDefinition {
	t.Helper()
	crds := map[string]*apiextv1.CustomResourceDefinition{}
	for _, r := range existing {
		if IsCRD(r) {
			old, err := CRDFromResource(r)
			require.NoError(t, err)
			crds[old.Name] = old
		}
	}
	return crds
}

// existingServiceSelectors returns the selectors of the Services among
// the resources on the cluster before a deploy, by namespace/name.
func existingServiceSelectors(t *testing.T, existing []ctlres.Resource) map[string]map[string]string {
	t.Helper()
	services := map[string]map[string]string{}
	for _, r := range existing {
		if r.Kind() == "Service" {
			sel, _, err := unstructured.NestedStringMap(r.UnstructuredObject(), "spec", "selector")
			require.NoError(t, err)
			services[r.Namespace()+"/"+r.Name()] = sel
		}
	}
	return services
}
