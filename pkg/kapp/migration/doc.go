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
//	run.go                      Run: plan every CRD, print, confirm, migrate them one after the other
//	plan.go                     Plan: what migrating one CRD means, and why a CRD cannot be migrated
//	migrate.go                  Migrator: the steps both methods share (the storage version taking effect)
//	rewrite.go                  the client-side rewrite (--method rewrite) and its progress
//	managedfields.go            managedFields entries at other versions moved to the storage version
//	storageversionmigration.go  the cluster's in-tree storage version migrator (--method migrator, 1.37+)
//	cluster.go                  the Cluster interface, and its implementation with pkg/kapp/kube
package migration
