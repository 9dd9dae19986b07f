package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// For the external tests (package crdupgradesafety_test), which read
// findings through pkg/kapp/report.

// ReadImpact is readImpact's findings.
func ReadImpact(t *testing.T, oldSpec, newSpec string, objs []map[string]any, cfg *config.Settings) []finding.Finding {
	t.Helper()
	out, _ := readImpact(t, oldSpec, newSpec, objs, cfg)
	return out
}

// ReadImpactWith is readImpactWith's findings.
func ReadImpactWith(t *testing.T, oldSpec, newSpec string, objs []map[string]any, cfg *config.Settings, opts ImpactOptions) []finding.Finding {
	t.Helper()
	out, _ := readImpactWith(t, oldSpec, newSpec, objs, cfg, opts)
	return out
}

// The live checks' findings judged in a policy of their own, as the
// engine's one call judges them with the pair's (for the tests of each
// check alone).

// Deletion is DeletionFor judged.
func Deletion(crdName string, count int, replaceCause string, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, crdName)
	return p.Judged(DeletionFor(p, count, replaceCause))
}

// Dropped is DroppedFor judged.
func Dropped(crdName string, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, crdName)
	return p.Judged(DroppedFor(p))
}

// Findings is FindingsFor judged.
func (r *ManagedFieldsReader) Findings(cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, r.crd)
	return p.Judged(r.FindingsFor(p))
}

// Findings is FindingsFor judged.
func (r *OwnerReferencesReader) Findings(cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, r.crd)
	return p.Judged(r.FindingsFor(p))
}

// NewObjectReader is NewObjectReaderFor in a policy of its own (for the
// readers' tests alone).
func NewObjectReader(oldCRD, newCRD *apiextv1.CustomResourceDefinition, version, source string,
	findings []finding.Finding, cfg *config.Settings) (*ObjectReader, error) {
	return NewObjectReaderFor(finding.NewPolicy(cfg, newCRD.Name), oldCRD, newCRD, version, source, findings)
}

// NoObjectsRead is NoObjectsReadFor in a policy of its own.
func NoObjectsRead(newCRD *apiextv1.CustomResourceDefinition, version, source string,
	findings []finding.Finding, cfg *config.Settings) (finding.VersionImpact, error) {
	return NoObjectsReadFor(finding.NewPolicy(cfg, newCRD.Name), newCRD, version, source, findings)
}

// Findings is FindingsFor judged in a policy of its own.
func (r *ConversionReader) Findings(cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, r.crd)
	return p.Judged(r.FindingsFor(p))
}
