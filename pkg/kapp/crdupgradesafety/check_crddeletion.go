package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// Deletion is the crdDeletion live check: the finding for deleting a CRD
// that still has count custom resources. replaceCause is "" for a CRD the
// change set deletes, or why kapp replaces it (deletes and creates it
// again) instead of updating it, e.g. "update strategy always-replace".
// None when count is 0 or the check is disabled.
func Deletion(crdName string, count int, replaceCause string, cfg *config.Settings) []Finding {
	p := newPolicy(cfg, crdName)
	if count <= 0 || !p.cfg.Checks.CRD.CRDDeletion.Enabled {
		return nil
	}
	noun := plural.Of(count, "custom resource", "custom resources")
	if replaceCause == "" {
		p.crdLevelWith(config.EnforcementStrict, "", config.CheckCRDDeletion, backupRemedy(crdName), Change{Kind: "deleted"},
			"deleting the CRD would delete its %d existing %s", count, noun)
	} else {
		p.crdLevelWith(config.EnforcementStrict, "", config.CheckCRDDeletion, &Remedy{Action: RemedyUpdateInPlace, Detail: replaceCause}, Change{Kind: "replaced"},
			"%s: kapp would delete and recreate the CRD, deleting its %d existing %s", replaceCause, count, noun)
	}
	for i := range p.findings {
		p.findings[i].Impact = &Impact{Source: SourceCluster, Objects: count, Affected: count, VersionAffected: count,
			Effects: []EffectCount{{Effect: EffectDeleted, Objects: count, Examples: []ObjectEffect{}}}}
		// Judged again with the objects counted (acceptDataLoss).
		p.findings[i].rejudge()
		judgeFinal(p.cfg, &p.findings[i])
	}
	return p.findings
}

// Dropped returns the crdDeletion finding for a CRD that the old inputs
// hold and the new ones lack, when no cluster is at hand to count its
// custom resources: deploying the new inputs with kapp deletes the CRD, and
// with it every custom resource it has (none when the check is disabled).
func Dropped(crdName string, cfg *config.Settings) []Finding {
	p := newPolicy(cfg, crdName)
	if !p.cfg.Checks.CRD.CRDDeletion.Enabled {
		return nil
	}
	p.crdLevelWith(config.EnforcementStrict, "", config.CheckCRDDeletion, backupRemedy(crdName), Change{Kind: "missingFromInputs"},
		"missing from the new inputs: kapp would delete the CRD with all its custom resources")
	return p.findings
}

// backupRemedy is the way forward from deleting a CRD with objects: back
// them up, and delete them explicitly first.
func backupRemedy(crdName string) *Remedy {
	return &Remedy{Action: RemedyBackupObjects,
		Command: "kubectl get " + crdName + " --all-namespaces -o yaml > " + crdName + ".backup.yaml"}
}
