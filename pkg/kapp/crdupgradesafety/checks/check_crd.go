package checks

import (
	"slices"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/storedversions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of scope: the CRD's scope changed.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckScope}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyNewCRD})

// The descriptor of storedVersionRemoval: a version objects are stored at removed.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckStoredVersionRemoval}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyMigrateStorage, Loss: finding.LossAlways})

// The descriptor of servedVersionRemoval: a served version removed (or unserved).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckServedVersionRemoval}, Runs: finding.RunsOnCRD, Remedy: finding.RemedyUnserveFirst})

// checkScope: the scope may not change between Namespaced and Cluster.
func checkScope(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.Settings.Checks.CRD.Scope.Enabled || old.Spec.Scope == new.Spec.Scope {
		return
	}
	p.CRDLevel(config.EnforcementStrict, "", config.CheckScope, finding.Change{Kind: "changed", Old: string(old.Spec.Scope), New: string(new.Spec.Scope)}, "scope changed: %s -> %s", old.Spec.Scope, new.Spec.Scope)
}

// storedVersions are the versions objects may be stored in: the live
// status.storedVersions, or (offline, where the old CRD has no status) the
// old storage version.
func storedVersions(old *apiextv1.CustomResourceDefinition) []string {
	if len(old.Status.StoredVersions) > 0 {
		return old.Status.StoredVersions
	}
	for _, v := range old.Spec.Versions {
		if v.Storage {
			return []string{v.Name}
		}
	}
	return nil
}

// migrateCommand is the command that makes a removal safe
// (docs/migrate.md), with the new storage version as its --to.
func migrateCommand(crd string, new *apiextv1.CustomResourceDefinition) string {
	command := "kapp tools crd-migrate-storage --crd " + crd
	if v := storedversions.StorageVersion(new); v != "" {
		command += " --to " + v
	}
	return command
}

// checkStoredVersionRemoval: a version objects may be stored in must stay.
// Live, a version the old CRD declares that status.storedVersions no
// longer lists counts as stored when storedVersions was trimmed without
// evidence (storedversions.UnprovenTrim: by hand, not by the migrate
// command or the cluster's migrator).
func checkStoredVersionRemoval(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.Settings.Checks.CRD.StoredVersionRemoval.Enabled {
		return
	}
	newVersions := VersionsByName(new)
	stored := storedVersions(old)
	for _, name := range stored {
		if _, ok := newVersions[name]; !ok {
			command := migrateCommand(p.CRD, new)
			if running := migrationRunning(old); running != "" {
				// The cluster's migrator is at work: it trims the stored
				// versions itself when it is done.
				p.CRDLevelWith(config.EnforcementStrict, name, config.CheckStoredVersionRemoval,
					&finding.Remedy{Action: finding.RemedyWaitForMigration, Version: name, Detail: running}, finding.Change{Kind: "removedWhileMigrating"},
					"stored version %q removed while a storage version migration is running (%s)", name, running)
				continue
			}
			p.CRDLevelWith(config.EnforcementStrict, name, config.CheckStoredVersionRemoval,
				&finding.Remedy{Action: finding.RemedyMigrateStorage, Version: name, Command: command}, finding.Change{Kind: "removed"},
				"stored version %q removed: objects stored in it must be migrated first", name)
		}
	}
	if len(old.Status.StoredVersions) == 0 {
		return // offline: no status to judge
	}
	trim := storedversions.UnprovenTrim(old)
	if trim == nil {
		return
	}
	for _, v := range old.Spec.Versions {
		if _, ok := newVersions[v.Name]; ok || slices.Contains(stored, v.Name) {
			continue
		}
		p.CRDLevelWith(config.EnforcementStrict, v.Name, config.CheckStoredVersionRemoval,
			&finding.Remedy{Action: finding.RemedyProveMigration, Version: v.Name, Command: migrateCommand(p.CRD, old), Detail: trimDetail(trim)}, finding.Change{Kind: "removedAfterUnprovenTrim"},
			"version %q removed after status.storedVersions was trimmed %s with no completed migration on record: objects may still be stored in it",
			v.Name, trimDetail(trim))
	}
}

// trimDetail names who trimmed status.storedVersions, and when.
func trimDetail(t *storedversions.Trim) string {
	s := "by " + t.Manager
	if t.Time != nil {
		s += " at " + t.Time.UTC().Format(time.RFC3339)
	}
	return s
}

// CompareStatus judges a write of a CRD's status (old: the stored CRD,
// new: as it would be stored) that drops versions from
// status.storedVersions, when the caller found no evidence for it
// (storedversions): one storedVersionRemoval finding per dropped version,
// an error (a warning under failMode open or mode warn).
func CompareStatus(old, new *apiextv1.CustomResourceDefinition, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, new.Name)
	if !p.Settings.Checks.CRD.StoredVersionRemoval.Enabled {
		return nil
	}
	// Under failMode open, a drop no evidence the webhook can see backs
	// (another migration tool's) passes with a warning.
	level := p.Settings.FailDecisionFor(config.FailUnprovenStoredVersionsTrim, nil).Decision.Enforcement()
	for _, v := range storedversions.Removed(old.Status.StoredVersions, new.Status.StoredVersions) {
		p.CRDLevelWith(level, v, config.CheckStoredVersionRemoval,
			&finding.Remedy{Action: finding.RemedyMigrateBeforeTrim, Version: v, Command: migrateCommand(p.CRD, old)}, finding.Change{Kind: "trimmed"},
			"status.storedVersions trimmed: %q dropped with no completed migration on record: objects stored in it become unreadable once the version is removed", v)
	}
	finding.SortFindings(p.Findings)
	return p.Judged(p.Findings)
}

// migrationRunning returns the message of the CRD's StorageMigrating
// condition while it is True ("Migration widgets-x7k2p is running": the
// cluster's storage version migrator, Kubernetes 1.37), "" otherwise.
func migrationRunning(crd *apiextv1.CustomResourceDefinition) string {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextv1.StorageMigrating && c.Status == apiextv1.ConditionTrue {
			if c.Message == "" {
				return "condition StorageMigrating is True"
			}
			return c.Message
		}
	}
	return ""
}

// checkServedVersionRemoval: a served version must first be set
// served: false before it is removed (the removal lifecycle of OLM v0, docs/migrate.md).
// A version that stays but is no longer served is that documented first
// step, yet its clients get 404: reported at unservedEnforcement (Warn by
// default).
func checkServedVersionRemoval(p *finding.Policy, old, new *apiextv1.CustomResourceDefinition) {
	c := p.Settings.Checks.CRD.ServedVersionRemoval
	if !c.Enabled {
		return
	}
	newVersions := VersionsByName(new)
	for _, v := range old.Spec.Versions {
		if !v.Served {
			continue
		}
		nv, ok := newVersions[v.Name]
		switch {
		case !ok:
			p.CRDLevel(config.EnforcementStrict, v.Name, config.CheckServedVersionRemoval, finding.Change{Kind: "removed"},
				"served version %q removed without first being set served: false", v.Name)
		case !nv.Served:
			p.CRDLevel(c.UnservedEnforcement, v.Name, config.CheckServedVersionRemoval, finding.Change{Kind: "unserved", Old: "true", New: "false"},
				"version %q no longer served (served: true -> false): its clients get 404 Not Found", v.Name)
		}
	}
}
