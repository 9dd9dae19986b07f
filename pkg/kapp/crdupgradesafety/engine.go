package crdupgradesafety

import (
	"context"
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Pair is one CRD update the engine judges, with what the caller already
// knows of it.
type Pair struct {
	Old, New *apiextv1.CustomResourceDefinition
	// Findings are the pair's offline findings the caller has, the stored
	// objects are read against: the comparison's (Compare's, from a cache
	// or the service's offline pass, with the same settings) when
	// Compared; otherwise Judge compares and adds its findings.
	Findings []finding.Finding
	Compared bool
	// Live are findings the caller made of the pair itself (a server-side
	// dry run): judged with the rest.
	Live []finding.Finding
	// The live views of the pair, steps of this call under its policy
	// (live.go): conversionOrdering in a kapp deploy (Ordering), the CRD
	// deleted with its objects (Deletion: a replace, or a removal: Old
	// alone), the managedFields of its objects, what its conversion
	// webhook does to them and their ownerReferences (read from the
	// sources ManagedFields, Conversion and Dependents the caller adapts), and a write of its status that trims storedVersions with
	// no evidence (StatusTrim: nothing else is compared).
	Ordering      *finding.ConversionOrdering
	Deletion      *Deletion
	ManagedFields Lister
	Conversion    ConversionProber
	Dependents    Dependents
	StatusTrim    bool
	// Policy is the pair's policy (finding.NewPolicy of New's name) when
	// the caller entered it for the comparison (CompareWith); nil: Judge
	// enters it. Either way a pair enters one.
	Policy *finding.Policy
	// Validators, when set, keeps the validators of stored objects'
	// batches across pairs (objects.Validators); nil: built per batch.
	Validators *objects.Validators
}

// Objects is a source of stored objects: a cluster's pages, sample
// objects, or nil for none. The engine defines it; the evaluation service
// adapts a cluster (or the samples given) to it.
type Objects interface {
	// Source is finding.SourceCluster or finding.SourceSamples: what the
	// impacts say the objects are.
	Source() string
	// List calls batch with the stored objects of crd at version (as the
	// apiserver serves them there, converted if need be), a batch at a
	// time, and returns batch's error if it fails. A read that fails
	// through the CRD's conversion webhook returns an *UnreadableError:
	// the engine judges the version unreadable and goes on. Eager: the
	// objects are at hand (samples), so every version read gets its
	// reader even when it has no object.
	List(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string, batch func([]map[string]any) error) error
	Eager() bool
}

// UnreadableError is a read of stored objects that failed through the
// CRD's conversion webhook (Webhook names it): what the update does to
// them is unknown, a finding (objects.Unreadable) rather than an error.
type UnreadableError struct {
	Webhook string
	Err     error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("reading through the conversion webhook (%s): %v", e.Webhook, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// Judge is the engine's one call per pair: it compares Old with New (unless
// the caller gives the comparison), reads the stored objects of src at the
// versions whose schema changed (none when src is nil or the pair is a
// create), joins what they showed to the findings and judges every finding
// once (finding.Policy.Apply), sorted, with the findings of the pair's
// live views (live.go), every one in the pair's one policy. Every stored
// object is read as the apiserver of the Kubernetes version judged
// (cfg.KubeVersion) will under the new CRD. A nil cfg is config.Default().
func Judge(ctx context.Context, p Pair, cfg *config.Settings, src Objects) ([]finding.Finding, error) {
	cfg = finding.SettingsOf(cfg)
	// The pair's one policy: the comparison's, the live views', the
	// readers' and the judgement's findings are its lists.
	pol := p.Policy
	if pol == nil {
		pol = finding.NewPolicy(cfg, p.name())
	}
	findings := p.Findings
	switch {
	case p.StatusTrim:
		findings = append(checks.CompareStatusFor(pol.Sub(), p.Old, p.New), findings...)
	case !p.Compared && p.Old != nil && p.New != nil:
		findings = append(checks.CompareWith(pol, p.Old, p.New), findings...)
	}
	if p.Ordering != nil && p.Old != nil {
		findings = append(findings, checks.ConversionOrderingFor(pol.Sub(), p.Old, p.New, p.Ordering)...)
	}
	live, err := liveViews(ctx, pol, p)
	if err != nil {
		return nil, err
	}
	var impacts []finding.VersionImpact
	if src != nil && p.Old != nil && p.New != nil {
		var unreadable []finding.Finding
		impacts, unreadable, err = read(ctx, pol, p, findings, src)
		if err != nil {
			return nil, err
		}
		live = append(live, unreadable...)
	}
	all := make([]finding.Finding, 0, len(findings)+len(live))
	all = append(append(all, findings...), live...)
	return pol.Apply(all, impacts), nil
}

// name is the name of the pair's CRD: New's, Old's for a removal.
func (p Pair) name() string {
	if p.New != nil {
		return p.New.Name
	}
	return p.Old.Name
}

// read reads the stored objects of src at every version to read
// (objects.VersionsToRead), each through an ObjectReader built for its
// first batch (a version without objects needs none of its schemas:
// objects.NoObjectsReadFor), and returns what each version showed, and the
// findings of versions that could not be read through the conversion
// webhook.
func read(ctx context.Context, pol *finding.Policy, p Pair, findings []finding.Finding, src Objects) (
	[]finding.VersionImpact, []finding.Finding, error) {

	cfg := pol.Settings
	what := "custom resources"
	if src.Source() == finding.SourceSamples {
		what = "sample objects"
	}
	var impacts []finding.VersionImpact
	var unreadable []finding.Finding
	for _, version := range objects.VersionsToRead(p.Old, p.New) {
		var reader *objects.ObjectReader
		newReader := func() (err error) {
			reader, err = objects.NewObjectReaderFor(pol, checks.ValidatedAt(p.Old, cfg.KubeVersion),
				checks.ValidatedAt(p.New, cfg.KubeVersion), version, src.Source(), findings)
			if err != nil {
				return fmt.Errorf("reading %s of CRD %s: %w", what, p.New.Name, err)
			}
			reader.UseValidators(p.Validators)
			return nil
		}
		if src.Eager() {
			if err := newReader(); err != nil {
				return nil, nil, err
			}
		}
		err := src.List(ctx, p.Old, version, func(batch []map[string]any) error {
			if reader == nil {
				if err := newReader(); err != nil {
					return err
				}
			}
			reader.Read(batch)
			return nil
		})
		var ue *UnreadableError
		switch {
		case errors.As(err, &ue):
			unreadable = append(unreadable, objects.UnreadableFor(pol, version, ue.Webhook, ue.Err)...)
			continue
		case err != nil:
			return nil, nil, err
		case reader == nil:
			impact, err := objects.NoObjectsReadFor(pol, p.New, version, src.Source(), findings)
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s of CRD %s: %w", what, p.New.Name, err)
			}
			impacts = append(impacts, impact)
			continue
		}
		impacts = append(impacts, reader.Result())
	}
	return impacts, unreadable, nil
}

// CompareWith is Compare under the pair's policy p (finding.NewPolicy of
// new's name), which the caller hands on to Judge (Pair.Policy).
func CompareWith(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) []finding.Finding {
	return checks.CompareWith(p, old, new)
}

// Compare compares the old CRD (from the cluster, or an old file) with the
// new one and returns every finding, sorted, judged under cfg, without
// reading any stored object: the one call per pair with no source of
// objects (Judge), for library callers.
func Compare(old, new *apiextv1.CustomResourceDefinition, cfg *config.Settings) []finding.Finding {
	fs, _ := Judge(context.Background(), Pair{Old: old, New: new}, cfg, nil) // nothing read: no error
	return fs
}
