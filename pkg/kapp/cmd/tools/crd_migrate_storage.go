package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/migration"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/spf13/cobra"
)

// ErrNoCRDsToMigrate is returned when the inputs name no CRD.
var ErrNoCRDsToMigrate = errors.New("no CRDs to migrate")

type CRDMigrateStorageOptions struct {
	ui          ui.UI
	depsFactory cmdcore.DepsFactory

	CRDFlags     CRDMigrateStorageCRDFlags
	MigrateFlags CRDMigrateStorageFlags

	// cluster reaches the cluster; nil uses kapp's clients (tests set it).
	cluster func() (migration.Cluster, error)
}

func NewCRDMigrateStorageOptions(ui ui.UI, depsFactory cmdcore.DepsFactory) *CRDMigrateStorageOptions {
	return &CRDMigrateStorageOptions{ui: ui, depsFactory: depsFactory}
}

func NewCRDMigrateStorageCmd(o *CRDMigrateStorageOptions, _ cmdcore.FlagsFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "crd-migrate-storage",
		Short: "Rewrite stored custom resources at their CRD's storage version and trim status.storedVersions",
		Long: `Rewrite every stored custom resource of the given CRDs at the CRD's storage
version, then set the CRD's status.storedVersions to the storage version alone.

Two methods (--method): where the cluster serves storagemigration.k8s.io/v1
(Kubernetes 1.37 and later), the cluster's own storage version migrator does
it: the command creates a StorageVersionMigration per CRD, follows its
conditions, checks that the migrator trimmed status.storedVersions and deletes
the migration. Elsewhere the command rewrites the objects itself (below).
--method auto (the default) picks the migrator when the cluster serves it, and
prints its choice. Kubernetes 1.37.0 to 1.37.2 trim status.storedVersions
after a migration that failed (kubernetes/kubernetes#143103): there auto
rewrites the objects itself and --method migrator is refused.
With either method, the managedFields entries of every object that name
another version are moved to the storage version (manager, fields and
ownership kept) before status.storedVersions is trimmed: server-side apply
converts an object to every version its managedFields name, and fails for
good once one is removed. Under a conversion webhook, entries at a version
whose schema declares other fields than the storage version's are dropped
instead (their paths would name other data), and the output says whose.
A CRD whose status.storedVersions is trimmed already gets only that step,
where needed.
This is the step that makes removing an old version of a CRD safe: the
CRDUpgradeSafety check blocks the removal (storedVersionRemoval) while the
version is in status.storedVersions. See docs/migrate.md for the whole path.

With --method rewrite, for each CRD: its storage version must be --to (when
given) and served. Every
custom resource (all namespaces) is listed at the storage version and written
back unchanged; the apiserver re-encodes it at the storage version, and skips
the write for objects already stored at it. Only when every object is written
is status.storedVersions trimmed, through the status subresource, and only if
the CRD did not change meanwhile. Nothing is written when any CRD cannot be
migrated.

An object that cannot be written (a webhook, a conflict) is named with its
cause and does not stop the others, nor the other CRDs; the CRD's
status.storedVersions is left as it was and the command exits with 1.
An interrupted or failed run never trims status.storedVersions before every
object is migrated; running the command again finishes the job (objects
already migrated cost no write).

Exit status:
  0  migrated (or nothing to do, or --dry-run)
  1  not migrated: bad input, a CRD that cannot be migrated, cluster errors,
     objects that could not be rewritten or whose managedFields could not be moved`,
		RunE:        func(_ *cobra.Command, _ []string) error { return o.Run() },
		Annotations: map[string]string{cmdapp.TTYByDefaultKey: ""},
		Example: `
  # Migrate the stored objects of a CRD to its storage version
  kapp tools crd-migrate-storage --crd widgets.example.com

  # The same, asserting that v1 is the storage version, without asking
  kapp tools crd-migrate-storage --crd widgets.example.com --to v1 -y

  # Every CRD of a release, first without changing anything
  kapp tools crd-migrate-storage -f release-1.1/crds/ --dry-run`,
	}
	o.CRDFlags.Set(cmd)
	o.MigrateFlags.Set(cmd)
	return cmd
}

func (o *CRDMigrateStorageOptions) Run() error {
	req := migration.Request{
		To:          o.MigrateFlags.To,
		Method:      o.MigrateFlags.Method,
		Concurrency: o.MigrateFlags.Concurrency,
		DryRun:      o.MigrateFlags.DryRun,
		UI:          newMigrateUI(o.ui),
	}
	if err := req.Validate(); err != nil {
		return err
	}
	var err error
	if req.Names, err = o.crdNames(); err != nil {
		return err
	}
	if req.Cluster, err = o.migrationCluster(); err != nil {
		return err
	}
	err = migration.Run(context.Background(), req)
	var ce *migration.ConversionError
	if errors.As(err, &ce) {
		// The probe's findings, as every output words them.
		for _, f := range ce.Findings {
			o.ui.PrintLinef("%s", report.Message(f))
		}
	}
	return err
}

// crdNames returns the names of --crd, then of the CRDs in --file, in
// order and without repeats.
func (o *CRDMigrateStorageOptions) crdNames() ([]string, error) {
	if len(o.CRDFlags.Names) == 0 && len(o.CRDFlags.Files) == 0 {
		return nil, fmt.Errorf("expected at least one --crd or --file naming the CRDs to migrate")
	}
	if stdinCount(o.CRDFlags.Files) > 1 {
		return nil, fmt.Errorf("expected standard input (-) at most once among --file")
	}
	var names []string
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for _, name := range o.CRDFlags.Names {
		if name = strings.TrimSpace(name); name == "" {
			return nil, fmt.Errorf("expected --crd to name a CRD (plural.group), got an empty name")
		}
		add(name)
	}
	if len(o.CRDFlags.Files) > 0 {
		set, err := inputs.Load(o.CRDFlags.Files, "input")
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		if len(set.CRDs) == 0 {
			return nil, fmt.Errorf("%w: the --file inputs (%s) hold no apiextensions.k8s.io/v1 CustomResourceDefinition",
				ErrNoCRDsToMigrate, strings.Join(o.CRDFlags.Files, ", "))
		}
		for _, c := range set.CRDs {
			add(c.CRD.Name)
		}
	}
	return names, nil
}

func (o *CRDMigrateStorageOptions) migrationCluster() (migration.Cluster, error) {
	if o.cluster != nil {
		return o.cluster()
	}
	c, err := preflight.KubeClientFromDeps(o.depsFactory)
	if err != nil {
		return nil, err
	}
	return migration.FromClient(c), nil
}
