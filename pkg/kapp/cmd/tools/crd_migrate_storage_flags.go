package tools

import (
	"github.com/crdsafety/kapp/pkg/kapp/migration"
	"github.com/spf13/cobra"
)

// CRDMigrateStorageCRDFlags select the CRDs: by name, or every CRD in files.
type CRDMigrateStorageCRDFlags struct {
	Names []string
	Files []string
}

func (s *CRDMigrateStorageCRDFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&s.Names, "crd", nil, "Set name of a CRD to migrate (format: plural.group) (can repeat)")
	cmd.Flags().StringSliceVarP(&s.Files, "file", "f", nil,
		"Set file whose CRDs to migrate, by name (format: /tmp/foo, https://..., -) (can repeat)")
}

// CRDMigrateStorageFlags shape the migration.
type CRDMigrateStorageFlags struct {
	To          string
	Method      string
	Concurrency int
	DryRun      bool
}

func (s *CRDMigrateStorageFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.To, "to", "",
		"Set the version to migrate to; it must be the CRD's storage version (default: the current storage version)")
	cmd.Flags().StringVar(&s.Method, "method", migration.MethodAuto,
		"Set how objects are migrated (auto: the cluster's storage version migrator where the cluster serves storagemigration.k8s.io/v1, except on Kubernetes 1.37.0-1.37.2, else rewrite; migrator; rewrite: this command rewrites them)")
	cmd.Flags().IntVar(&s.Concurrency, "concurrency", migration.DefaultMigrationConcurrency, "Set maximum number of object updates in flight per CRD (rewrite)")
	cmd.Flags().BoolVar(&s.DryRun, "dry-run", false, "Print what would be migrated without changing anything")
}
