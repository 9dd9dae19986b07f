package crdupgradesafety

import (
	"context"
	"errors"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Deletion is what a pair's CRD loses when it is deleted: a removal (the
// change set deletes it: Pair with Old alone, Cause "") or a replace (kapp
// deletes and creates it again: Cause says why, e.g. "update strategy
// always-replace"). Objects is how many custom resources are deleted with
// it; Uncounted: no cluster counted them (a CRD missing from the new
// inputs), so every one it has is lost.
type Deletion struct {
	Objects   int
	Cause     string
	Uncounted bool
}

// Lister is a source of the stored objects of a CRD at a version, a batch
// at a time (Objects.List's contract, UnreadableError included): what the
// managedFields check reads.
type Lister interface {
	List(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string, batch func([]map[string]any) error) error
}

// Dependents is a source of the objects (of every resource) whose
// ownerReferences name an owner: what the ownerReferences check reads.
type Dependents interface {
	// DependentsOf calls add with each object whose ownerReferences name
	// kind at one of apiVersions (the owner's apiVersion, the object's
	// resource as kubectl spells it, its name) and returns how many
	// objects were read and the resources that could not be.
	// ErrNoDependents: the source cannot list them (the check is skipped).
	DependentsOf(ctx context.Context, apiVersions []string, kind string,
		add func(ownerAPIVersion, resource, name string)) (read int, unreadable []UnreadableResource, err error)
}

// ConversionProber runs the conversion probe of a pair: the caller
// reaches the CRD's conversion webhook (through a cluster's service proxy,
// or a URL given) with the stored objects or the samples, and returns what
// the probe gathered (nil: nothing to probe), which the engine makes the
// conversionWebhook findings of under the pair's policy.
type ConversionProber interface {
	Probe(ctx context.Context) (ConversionResult, error)
}

// ConversionResult is what a conversion probe gathered (a
// *ConversionReader), or the apply-time verdict that stands for it
// (ConversionAtApplyTime): the engine makes its conversionWebhook findings
// under the pair's policy.
type ConversionResult interface {
	FindingsFor(p *finding.Policy) []finding.Finding
}

// ConversionAtApplyTime is the apply-time verdict of an update whose new
// conversion code ships in the same kapp deploy (o's Shipped workloads:
// objects.ConversionAtApplyTimeFor), nil when nothing ships or the update
// needs no probe.
func ConversionAtApplyTime(old, new *apiextv1.CustomResourceDefinition, o *finding.ConversionOrdering) ConversionResult {
	if len(o.Shipped()) == 0 || !objects.NeedsConversionProbe(old, new) {
		return nil
	}
	return applyTime{old: old, new: new, o: o}
}

type applyTime struct {
	old, new *apiextv1.CustomResourceDefinition
	o        *finding.ConversionOrdering
}

func (a applyTime) FindingsFor(p *finding.Policy) []finding.Finding {
	return objects.ConversionAtApplyTimeFor(p, a.old, a.new, a.o)
}

// ConversionReader gathers what a conversion probe found
// (objects.ConversionReader); ConversionBudget bounds the probe.
type (
	ConversionReader = objects.ConversionReader
	ConversionBudget = objects.ConversionBudget
)

// NewConversionReader is objects.NewConversionReader.
func NewConversionReader(crd *apiextv1.CustomResourceDefinition, webhook, source string, budget ConversionBudget) *ConversionReader {
	return objects.NewConversionReader(crd, webhook, source, budget)
}

// NeedsConversionProbe is objects.NeedsConversionProbe: whether the
// update changes what the conversion webhook is asked.
func NeedsConversionProbe(old, new *apiextv1.CustomResourceDefinition) bool {
	return objects.NeedsConversionProbe(old, new)
}

// UnreadableResource is a resource whose objects' ownerReferences could not
// be read (objects.UnreadableResource).
type UnreadableResource = objects.UnreadableResource

// ErrNoDependents is a Dependents that cannot list dependents: the
// ownerReferences check does not run.
var ErrNoDependents = errors.New("dependents cannot be listed")

// liveViews runs the live views of p in the order the service has always
// run them (a deletion's count, managedFields, the conversion probe,
// ownerReferences), each
// under the pair's policy pol (a list of its own, so each view's ordinals
// are its own), and returns p.Live with their findings, not yet judged:
// Judge judges them with the rest, once.
func liveViews(ctx context.Context, pol *finding.Policy, p Pair) ([]finding.Finding, error) {
	live := append([]finding.Finding(nil), p.Live...)
	if d := p.Deletion; d != nil {
		if d.Uncounted {
			live = append(live, objects.DroppedFor(pol.Sub())...)
		} else {
			live = append(live, objects.DeletionFor(pol.Sub(), d.Objects, d.Cause)...)
		}
	}
	if p.Old == nil || p.New == nil {
		return live, nil
	}
	crd := &pol.Settings.Checks.CRD
	if p.ManagedFields != nil && crd.ManagedFields.Enabled {
		fs, err := readManagedFields(ctx, pol, p)
		if err != nil {
			return nil, err
		}
		live = append(live, fs...)
	}
	if p.Conversion != nil && crd.ConversionWebhook.Enabled {
		r, err := p.Conversion.Probe(ctx)
		if err != nil {
			return nil, err
		}
		if r != nil {
			live = append(live, r.FindingsFor(pol.Sub())...)
		}
	}
	if p.Dependents != nil && crd.OwnerReferences.Enabled {
		fs, err := readOwnerReferences(ctx, pol, p)
		if err != nil {
			return nil, err
		}
		live = append(live, fs...)
	}
	return live, nil
}

// readManagedFields runs the managedFields check of an update that removes
// or unserves a version (none otherwise: no object is read): one list of
// the stored objects, at a version the live CRD serves (its storage
// version if served: managedFields are the same at every version). A list
// that fails through the CRD's conversion webhook (UnreadableError) is an
// unreadable finding.
func readManagedFields(ctx context.Context, pol *finding.Policy, p Pair) ([]finding.Finding, error) {
	reader := objects.NewManagedFieldsReader(p.Old, p.New, pol.Settings.KubeVersion)
	if reader == nil {
		return nil, nil
	}
	version := ""
	for _, v := range p.Old.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return nil, nil // nothing served: nothing a client can apply
	}
	err := p.ManagedFields.List(ctx, p.Old, version, func(objs []map[string]any) error {
		reader.Read(objs)
		return nil
	})
	var ue *UnreadableError
	switch {
	case errors.As(err, &ue):
		return objects.UnreadableFor(pol, version, ue.Webhook, ue.Err), nil
	case err != nil:
		return nil, err
	}
	return reader.FindingsFor(pol.Sub()), nil
}

// readOwnerReferences runs the ownerReferences check of an update that
// removes a version (none otherwise: nothing is read): the metadata of the
// objects of every kind, once, for ownerReferences naming the CRD's kind
// at a removed version.
func readOwnerReferences(ctx context.Context, pol *finding.Policy, p Pair) ([]finding.Finding, error) {
	reader := objects.NewOwnerReferencesReader(p.Old, p.New)
	if reader == nil {
		return nil, nil
	}
	apiVersions, kind := reader.Owner()
	read, unreadable, err := p.Dependents.DependentsOf(ctx, apiVersions, kind, reader.Add)
	if errors.Is(err, ErrNoDependents) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	reader.Done(read, unreadable)
	return reader.FindingsFor(pol.Sub()), nil
}
