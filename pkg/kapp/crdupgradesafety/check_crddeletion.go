package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// deletion is the crdDeletion live check. replaceCause is "" for a CRD
// deleted by the change set, or why kapp replaces it (deletes and creates
// it again) instead of updating it.
func deletion(crdName string, count int, replaceCause string, cfg *config.Settings) []Finding {
	if cfg == nil {
		def := config.Default()
		cfg = &def
	}
	if count <= 0 || !cfg.Checks.CRD.CRDDeletion.Enabled {
		return nil
	}
	p := &policy{cfg: cfg, crd: crdName}
	noun := plural.Of(count, "custom resource", "custom resources")
	if replaceCause == "" {
		p.crdLevel(config.EnforcementStrict, "", config.CheckCRDDeletion, "deleting the CRD would delete its %d existing %s", count, noun)
	} else {
		p.crdLevel(config.EnforcementStrict, "", config.CheckCRDDeletion, "%s: kapp would delete and recreate the CRD, deleting its %d existing %s",
			replaceCause, count, noun)
	}
	return p.findings
}

// dropped is the crdDeletion check without a cluster: a CRD missing from the
// new inputs, whose custom resources cannot be counted.
func dropped(crdName string, cfg *config.Settings) []Finding {
	if cfg == nil {
		def := config.Default()
		cfg = &def
	}
	if !cfg.Checks.CRD.CRDDeletion.Enabled {
		return nil
	}
	p := &policy{cfg: cfg, crd: crdName}
	p.crdLevel(config.EnforcementStrict, "", config.CheckCRDDeletion, "missing from the new inputs: kapp would delete the CRD with all its custom resources")
	return p.findings
}
