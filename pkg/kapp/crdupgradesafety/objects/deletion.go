package objects

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// The descriptor of crdDeletion: a CRD deleted (or replaced) with its objects.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckCRDDeletion}, Runs: finding.RunsLive, Remedy: finding.RemedyBackupObjects, Loss: finding.LossAlways})

// Deletion is the crdDeletion live check: the finding for deleting a CRD
// that still has count custom resources. replaceCause is "" for a CRD the
// change set deletes, or why kapp replaces it (deletes and creates it
// again) instead of updating it, e.g. "update strategy always-replace".
// None when count is 0 or the check is disabled.
func Deletion(crdName string, count int, replaceCause string, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, crdName)
	if count <= 0 || !p.Settings.Checks.CRD.CRDDeletion.Enabled {
		return nil
	}
	noun := plural.Of(count, "custom resource", "custom resources")
	if replaceCause == "" {
		p.CRDLevelWith(config.EnforcementStrict, "", config.CheckCRDDeletion, backupRemedy(crdName), finding.Change{Kind: "deleted"},
			"deleting the CRD would delete its %d existing %s", count, noun)
	} else {
		p.CRDLevelWith(config.EnforcementStrict, "", config.CheckCRDDeletion, &finding.Remedy{Action: finding.RemedyUpdateInPlace, Detail: replaceCause}, finding.Change{Kind: "replaced"},
			"%s: kapp would delete and recreate the CRD, deleting its %d existing %s", replaceCause, count, noun)
	}
	for i := range p.Findings {
		p.Findings[i].Impact = &finding.Impact{Source: finding.SourceCluster, Objects: count, Affected: count, VersionAffected: count,
			Effects: []finding.EffectCount{{Effect: finding.EffectDeleted, Objects: count, Examples: []finding.ObjectEffect{}}}}
		// Judged again with the objects counted (acceptDataLoss).
		p.Findings[i].Rejudge()
		finding.JudgeFinal(p.Settings, &p.Findings[i])
	}
	return p.Findings
}

// Dropped returns the crdDeletion finding for a CRD that the old inputs
// hold and the new ones lack, when no cluster is at hand to count its
// custom resources: deploying the new inputs with kapp deletes the CRD, and
// with it every custom resource it has (none when the check is disabled).
func Dropped(crdName string, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, crdName)
	if !p.Settings.Checks.CRD.CRDDeletion.Enabled {
		return nil
	}
	p.CRDLevelWith(config.EnforcementStrict, "", config.CheckCRDDeletion, backupRemedy(crdName), finding.Change{Kind: "missingFromInputs"},
		"missing from the new inputs: kapp would delete the CRD with all its custom resources")
	return p.Judged(p.Findings)
}

// backupRemedy is the way forward from deleting a CRD with objects: back
// them up, and delete them explicitly first.
func backupRemedy(crdName string) *finding.Remedy {
	return &finding.Remedy{Action: finding.RemedyBackupObjects,
		Command: "kubectl get " + crdName + " --all-namespaces -o yaml > " + crdName + ".backup.yaml"}
}
