package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
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
