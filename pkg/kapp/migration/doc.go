// Package migration is the storage-version migration of
// `kapp tools crd-migrate-storage` (pkg/kapp/cmd/tools): every stored
// custom resource of a CRD rewritten at its storage version, its
// managedFields moved to that version (so that server-side apply goes on
// working once the old version is removed), then status.storedVersions
// trimmed to it, the safe path to removing an old
// version that the CRDUpgradeSafety check blocks (storedVersionRemoval).
//
// Files, one concept each:
//
//	run.go                      Run: plan every CRD, show the plan to the UI (which may stop it), migrate them one
//	                            after the other; the UI (facts in: plans, preview, outcome; progress lines)
//	plan.go                     Plan: what migrating one CRD means, and why a CRD cannot be migrated
//	migrate.go                  Migrator: the steps both methods share (the storage version taking effect)
//	rewrite.go                  the client-side rewrite (--method rewrite) and its progress
//	managedfields.go            managedFields entries at other versions moved to the storage version
//	fieldsets.go                FieldSetPolicy: which managedFields entries move, which are dropped (conversion webhook)
//	trimguard.go                the migrator versions that trim status.storedVersions after a failure (1.37.0-1.37.2)
//	storageversionmigration.go  the cluster's in-tree storage version migrator (--method migrator, 1.37+)
//	cluster.go                  the Cluster interface, and its implementation with pkg/kapp/kube
//
// The package prints nothing and asks nothing: the command words the
// facts it hands its UI, prints them with go-cli-ui and asks for
// confirmation (pkg/kapp/cmd/tools/crd_migrate_storage_output.go);
// TestMigrationHasNoUI keeps go-cli-ui out.
package migration
