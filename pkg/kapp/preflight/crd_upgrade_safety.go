package preflight

import (
	"context"
	"fmt"
	"maps"
	goruntime "runtime"
	"sync"
	"time"

	"carvel.dev/kapp/pkg/kapp/clusterapply"
	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	kpreflight "carvel.dev/kapp/pkg/kapp/preflight"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDGroupVersionKind is what the check looks for in the change graph.
var CRDGroupVersionKind = apiextv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// clusterOriginal is implemented by kapp's cluster changes: the live object
// kapp fetched to compute its diff (nil when the object does not exist).
type clusterOriginal interface {
	ClusterOriginalResource() ctlres.Resource
}

// kappChange is implemented by kapp's cluster changes: what kapp will do
// with the change (create, update, only wait for it to exist) and how: the
// apply strategy, which for an update is the resource's
// kapp.k14s.io/update-strategy or else --apply-default-update-strategy.
type kappChange interface {
	ApplyOp() clusterapply.ClusterChangeApplyOp
	ApplyStrategyOp() (clusterapply.ClusterChangeApplyStrategyOp, error)
}

// CRDUpgradeSafety is the kapp preflight check: it feeds the CRD changes of
// kapp's change graph to the engine and applies the outcome (warnings,
// error). It implements kapp's preflight.Check.
type CRDUpgradeSafety struct {
	ui      ui.UI
	cluster func() (evaluation.Cluster, error)
	enabled bool
	cfg     config.Settings
	// progressInterval throttles the progress lines of the live checks.
	progressInterval time.Duration
}

var _ kpreflight.Check = &CRDUpgradeSafety{}

// NewCRDUpgradeSafety returns the check. cluster is called at most once per
// run, and only when the run needs the cluster.
func NewCRDUpgradeSafety(ui ui.UI, cluster func() (evaluation.Cluster, error), enabled bool) *CRDUpgradeSafety {
	return &CRDUpgradeSafety{ui: ui, cluster: cluster, enabled: enabled, cfg: config.Default(), progressInterval: evaluation.ProgressInterval}
}

func (c *CRDUpgradeSafety) Enabled() bool      { return c.enabled }
func (c *CRDUpgradeSafety) SetEnabled(on bool) { c.enabled = on }

// Config returns the configuration in effect.
func (c *CRDUpgradeSafety) Config() config.Settings { return c.cfg }

// SetConfig decodes the `config` of the check's preflightRules entry; nil
// (no entry, or enabled only by --preflight) means the defaults. Decoding
// errors are returned as they are: kapp prefixes them with the check name.
func (c *CRDUpgradeSafety) SetConfig(raw kpreflight.CheckConfig) error {
	cfg, err := config.Decode(raw)
	if err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// Run checks every CRD upsert and delete in the change graph: the changes
// become a plan for the evaluation service (evaluation.Run), whose
// findings it words through one report.Report: the warnings it prints,
// and the deploy's error when a finding is an error (a
// *report.DeployError listing them, around the run's
// *evaluation.UnsafeUpgradeError).
func (c *CRDUpgradeSafety) Run(ctx context.Context, changeGraph *ctldgraph.ChangeGraph) error {
	defer evaluation.StartCheckTiming(timingOut()).Print()
	plan, missingOld, err := planFromGraph(changeGraph)
	if err != nil {
		return err
	}
	// One cluster for the run: the evaluation's and the conversion
	// webhook Services' (orderConversions), reached only when needed.
	cluster := c.cluster
	if cluster != nil {
		cluster = sync.OnceValues(cluster)
	}
	if c.cfg.Checks.CRD.ConversionOrdering.Enabled || c.cfg.Checks.CRD.ConversionWebhook.Enabled {
		if err := orderConversions(ctx, changeGraph, &plan, cluster); err != nil {
			return err
		}
	}
	res, err := evaluation.Run(ctx, evaluation.Request{
		Plan:             plan,
		Settings:         &c.cfg,
		Cluster:          cluster,
		OldFromCluster:   missingOld,
		Progressf:        c.ui.PrintLinef,
		ProgressInterval: c.progressInterval,
	})
	if err != nil {
		return err
	}
	rep := report.New(nil, res.Findings, c.cfg.MaxFindingsPerCRD, nil)
	for _, l := range rep.WarningLines() {
		c.ui.PrintLinef("Warning: %s: %s", config.CheckName, l)
	}
	if err := res.Err(); err != nil {
		return &report.DeployError{Err: err, Report: rep}
	}
	return nil
}

// planFromGraph collects the CRD changes of the graph: every create and
// update kapp will send, with the update strategy kapp will use and the
// object it will send (for the dry run), and every delete. Upserts whose
// change does not carry the live object kapp fetched are returned as
// indexes into plan.Pairs, for fillOld.
func planFromGraph(graph *ctldgraph.ChangeGraph) (evaluation.Plan, []int, error) {
	var plan evaluation.Plan
	var missingOld []int
	deletedPerGK := map[schema.GroupKind]int{}
	// Converting large CRDs to their type is most of the cost of planning:
	// the conversions run in parallel once every change is seen, each
	// filling its pair or removal (in graph order, so the first error is
	// the first CRD's).
	var converts []func() error

	for _, change := range graph.All() {
		ac := change.Change
		res := ac.Resource()
		op := ac.Op()
		if !IsCRD(res) {
			if op == ctldgraph.ActualChangeOpDelete {
				deletedPerGK[res.GroupKind()]++
			}
			continue
		}
		switch op {
		case ctldgraph.ActualChangeOpUpsert:
			strategy, send, err := applyOf(ac)
			if err != nil {
				return evaluation.Plan{}, nil, err
			}
			if !send {
				continue
			}
			var live ctlres.Resource
			if orig, ok := ac.(clusterOriginal); ok {
				live = orig.ClusterOriginalResource()
			} else {
				missingOld = append(missingOld, len(plan.Pairs))
			}
			i := len(plan.Pairs)
			plan.Pairs = append(plan.Pairs, evaluation.Pair{Strategy: strategy})
			converts = append(converts, func() error {
				pair := &plan.Pairs[i]
				var err error
				if pair.New, err = CRDFromResource(res); err != nil {
					return err
				}
				if pair.Send, err = sentObject(res); err != nil {
					return err
				}
				if live != nil {
					if pair.Old, err = CRDFromResource(live); err != nil {
						return fmt.Errorf("live %w", err)
					}
					if strategy == evaluation.StrategyAlwaysReplace {
						// kapp deletes the live CRD first.
						pair.Send = &unstructured.Unstructured{Object: live.DeepCopyRaw()}
					}
				}
				return nil
			})

		case ctldgraph.ActualChangeOpDelete:
			i := len(plan.Removals)
			plan.Removals = append(plan.Removals, evaluation.Removal{})
			converts = append(converts, func() error {
				crd, err := CRDFromResource(res)
				if err != nil {
					return fmt.Errorf("live %w", err)
				}
				plan.Removals[i].CRD = crd
				return nil
			})
		}
	}
	err := parallel.ForEach(context.Background(), len(converts), goruntime.GOMAXPROCS(0), func(_ context.Context, i int) error {
		return converts[i]()
	})
	if err != nil {
		return evaluation.Plan{}, nil, err
	}

	for i := range plan.Removals {
		plan.Removals[i].AlsoDeleted = deletedPerGK[crdGroupKind(plan.Removals[i].CRD)]
	}
	for i := range plan.Pairs {
		if old := plan.Pairs[i].Old; old != nil {
			plan.Pairs[i].AlsoDeleted = deletedPerGK[crdGroupKind(old)]
		}
	}
	return plan, missingOld, nil
}

// applyOf says how kapp applies an upsert of a CRD: the update strategy
// (for an update), and whether kapp sends anything at all (not for a
// resource it only waits for, kapp.k14s.io/exists, nor for an update with
// strategy skip). Changes that are not kapp's cluster changes fall back to
// the resource's annotation. An unknown strategy is kapp's own error, which
// kapp would otherwise report half way through the deploy.
func applyOf(ac ctldgraph.ActualChange) (strategy string, send bool, err error) {
	kc, ok := ac.(kappChange)
	if !ok {
		return ac.Resource().Annotations()[evaluation.UpdateStrategyAnnotation], true, nil
	}
	applyOp := kc.ApplyOp()
	if applyOp != clusterapply.ClusterChangeApplyOpAdd && applyOp != clusterapply.ClusterChangeApplyOpUpdate {
		return "", false, nil
	}
	op, err := kc.ApplyStrategyOp()
	if err != nil {
		return "", false, fmt.Errorf("CRD %s: %w", ac.Resource().Name(), err)
	}
	if applyOp == clusterapply.ClusterChangeApplyOpAdd {
		return "", true, nil // create strategies all start with a create
	}
	return string(op), string(op) != evaluation.StrategySkip, nil
}

// sentObject is the object kapp sends to create or update res: the
// resource of the change (for an update, rebased on the live object: its
// resourceVersion, uid, ...) with kapp's identity annotation. Only the
// maps down to the annotations are copied: the rest (the schemas) is
// shared with res, and only read (a deep copy of a large CRD cost more than
// its comparison).
func sentObject(res ctlres.Resource) (*unstructured.Unstructured, error) {
	obj := maps.Clone(res.UnstructuredObject())
	if meta, ok := obj["metadata"].(map[string]any); ok {
		meta = maps.Clone(meta)
		if ann, ok := meta["annotations"].(map[string]any); ok {
			meta["annotations"] = maps.Clone(ann)
		}
		obj["metadata"] = meta
	}
	sent := ctlres.NewResourceUnstructured(unstructured.Unstructured{Object: obj}, ctlres.ResourceType{})
	if err := ctlres.NewIdentityAnnotation(sent).AddMod().Apply(sent); err != nil {
		return nil, fmt.Errorf("CRD %s: adding kapp's identity annotation: %w", res.Name(), err)
	}
	return &unstructured.Unstructured{Object: sent.UnstructuredObject()}, nil
}

func crdGroupKind(crd *apiextv1.CustomResourceDefinition) schema.GroupKind {
	return schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
}

// IsCRD reports whether res is an apiextensions.k8s.io/v1 CustomResourceDefinition.
func IsCRD(res ctlres.Resource) bool {
	return res.APIVersion() == CRDGroupVersionKind.GroupVersion().String() && res.Kind() == CRDGroupVersionKind.Kind
}

// CRDFromResource converts a kapp resource to a typed CRD.
func CRDFromResource(res ctlres.Resource) (*apiextv1.CustomResourceDefinition, error) {
	crd := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(res.UnstructuredObject(), crd); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", res.Name(), err)
	}
	return crd, nil
}

// timingOut is where the check's timing line goes
// (evaluation.TimingEnvVar); tests replace it.
var timingOut = evaluation.TimingWriter
