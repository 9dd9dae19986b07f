package crdupgradesafety

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// checkScope: the scope may not change between Namespaced and Cluster.
func checkScope(p *policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.cfg.Checks.CRD.Scope.Enabled || old.Spec.Scope == new.Spec.Scope {
		return
	}
	p.crdLevel(config.EnforcementStrict, "", config.CheckScope, "scope changed: %s -> %s", old.Spec.Scope, new.Spec.Scope)
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

// checkStoredVersionRemoval: a version objects may be stored in must stay.
func checkStoredVersionRemoval(p *policy, old, new *apiextv1.CustomResourceDefinition) {
	if !p.cfg.Checks.CRD.StoredVersionRemoval.Enabled {
		return
	}
	newVersions := versionsByName(new)
	for _, name := range storedVersions(old) {
		if _, ok := newVersions[name]; !ok {
			// Name the command that makes the removal safe (docs/migrate.md),
			// with the new storage version as its --to.
			command := "kapp tools crd-migrate-storage --crd " + p.crd
			for _, v := range new.Spec.Versions {
				if v.Storage {
					command += " --to " + v.Name
				}
			}
			if running := migrationRunning(old); running != "" {
				// The cluster's migrator is at work: it trims the stored
				// versions itself when it is done.
				p.crdLevelWith(config.EnforcementStrict, name, config.CheckStoredVersionRemoval,
					&Remedy{Action: RemedyWaitForMigration, Version: name, Detail: running},
					"stored version %q removed while a storage version migration is running (%s)", name, running)
				continue
			}
			p.crdLevelWith(config.EnforcementStrict, name, config.CheckStoredVersionRemoval,
				&Remedy{Action: RemedyMigrateStorage, Version: name, Command: command},
				"stored version %q removed: objects stored in it must be migrated first", name)
		}
	}
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
func checkServedVersionRemoval(p *policy, old, new *apiextv1.CustomResourceDefinition) {
	c := p.cfg.Checks.CRD.ServedVersionRemoval
	if !c.Enabled {
		return
	}
	newVersions := versionsByName(new)
	for _, v := range old.Spec.Versions {
		if !v.Served {
			continue
		}
		nv, ok := newVersions[v.Name]
		switch {
		case !ok:
			p.crdLevel(config.EnforcementStrict, v.Name, config.CheckServedVersionRemoval,
				"served version %q removed without first being set served: false", v.Name)
		case !nv.Served:
			p.crdLevel(c.UnservedEnforcement, v.Name, config.CheckServedVersionRemoval,
				"version %q no longer served (served: true -> false): its clients get 404 Not Found", v.Name)
		}
	}
}
