package tools

import (
	"fmt"
	"strconv"
	"strings"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	uitable "github.com/cppforlife/go-cli-ui/ui/table"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/migration"
)

// The output of `kapp tools crd-migrate-storage`: migration.Run hands
// facts (the plans, the method, the dropped managedFields entries) to
// migrateUI, which words them, prints them with go-cli-ui and asks for
// confirmation. The progress lines come worded from the migration, and
// go through kapp's messages.

// migrateUI shows a migration with go-cli-ui.
type migrateUI struct {
	migration.Messages
	ui ui.UI
}

func newMigrateUI(u ui.UI) migrateUI {
	return migrateUI{Messages: cmdcore.NewPlainMessagesUI(u), ui: u}
}

// Planned prints the plan's table.
func (m migrateUI) Planned(plans []*migration.Plan) error {
	return printTable(m.ui, "CRDs", migratePlanTable(plans))
}

// Preview says there is nothing to do, or what a dry run would do; else
// it asks for confirmation and says which method runs.
func (m migrateUI) Preview(p migration.Preview) error {
	if lines := previewLines(p); len(lines) > 0 {
		for _, l := range lines {
			m.ui.PrintLinef("%s", l)
		}
		return nil
	}
	if err := m.ui.AskForConfirmation(); err != nil {
		return err
	}
	m.ui.PrintLinef("%s", methodLine(p))
	return nil
}

// Finished prints the table of the managedFields entries dropped, if any.
func (m migrateUI) Finished(o migration.Outcome) error {
	if len(o.Dropped) == 0 {
		return nil
	}
	return printTable(m.ui, "CRDs", droppedTable(o.Dropped))
}

// methodLine says which method runs, and why.
func methodLine(p migration.Preview) string {
	return fmt.Sprintf("Method: %s (%s)", p.Method, p.Why)
}

// previewLines are the lines of a run that ends at its preview: nothing
// pending, or a dry run (what each CRD would go through); none otherwise.
func previewLines(p migration.Preview) []string {
	if p.Pending() == 0 {
		return []string{fmt.Sprintf("Nothing to migrate: status.storedVersions of %s is the storage version alone, and no managedFields name another version",
			plural.Count(len(p.Plans), "CRD", "CRDs"))}
	}
	if !p.DryRun {
		return nil
	}
	var lines []string
	for _, pl := range p.Plans {
		switch {
		case !pl.Pending():
		case pl.Done():
			lines = append(lines, fmt.Sprintf("Would move the managedFields of %s of crd %s to %s (status.storedVersions is [%s] already)",
				plural.Count(pl.StaleManagedFields, "object", "objects"), pl.Name, pl.Storage, pl.Storage))
		case p.Method == migration.MethodMigrator:
			lines = append(lines, fmt.Sprintf("Would move the managedFields of the objects of crd %s to %s where they name another version, "+
				"then create a StorageVersionMigration (%s at %s), whose migrator sets status.storedVersions %s",
				pl.Name, pl.Storage, plural.Count(pl.Objects, "object", "objects"), pl.Storage, pl.StoredVersionsChange()))
		default:
			lines = append(lines, fmt.Sprintf("Would rewrite the %s of crd %s at %s with their managedFields at %s (those already stored at %s with managedFields at %s cost no write), then set status.storedVersions %s",
				plural.Count(pl.Objects, "object", "objects"), pl.Name, pl.Storage, pl.Storage, pl.Storage, pl.Storage, pl.StoredVersionsChange()))
		}
	}
	for _, pl := range p.Plans {
		if drop := pl.DroppedVersions(); pl.Pending() && len(drop) > 0 {
			lines = append(lines, fmt.Sprintf("crd %s converts through a webhook: managedFields entries at %s (and at versions it no longer has) would be dropped, not moved to %s: "+
				"their fields name other data at %s", pl.Name, strings.Join(drop, ", "), pl.Storage, pl.Storage))
		}
	}
	return append(lines, "Dry run: nothing changed")
}

// migratePlanTable lists what will happen to each CRD. Its keys are the JSON keys of
// the rows under kapp's --json.
func migratePlanTable(plans []*migration.Plan) uitable.Table {
	table := uitable.Table{
		Title:   "CRD storage migration",
		Content: "CRDs",
		Header: []uitable.Header{
			{Key: "crd", Title: "CRD"},
			{Key: "storage_version", Title: "Storage version"},
			{Key: "stored_versions", Title: "status.storedVersions"},
			{Key: "objects", Title: "Objects"},
		},
		SortBy: []uitable.ColumnSort{{Column: 0, Asc: true}},
	}
	for _, p := range plans {
		objects := strconv.Itoa(p.Objects)
		switch {
		case !p.Pending():
			objects = "-" // nothing to rewrite
		case p.Done():
			verb := "move"
			if len(p.DroppedVersions()) > 0 {
				verb = "move or drop" // entries at versions whose fields differ are dropped
			}
			objects = fmt.Sprintf("%d (managedFields of %d to %s)", p.Objects, p.StaleManagedFields, verb)
		}
		table.Rows = append(table.Rows, []uitable.Value{
			uitable.NewValueString(p.Name),
			uitable.NewValueString(p.Storage),
			uitable.NewValueString(p.StoredVersionsChange()),
			uitable.NewValueString(objects),
		})
	}
	return table
}

// droppedTable lists the managedFields entries dropped. Its keys are the
// JSON keys of the rows under kapp's --json.
func droppedTable(dropped []migration.DroppedManagedFields) uitable.Table {
	table := uitable.Table{
		Title:   "managedFields entries dropped",
		Content: "entries",
		Header: []uitable.Header{
			{Key: "crd", Title: "CRD"},
			{Key: "manager", Title: "Manager"},
			{Key: "operation", Title: "Operation"},
			{Key: "subresource", Title: "Subresource"},
			{Key: "api_version", Title: "apiVersion"},
			{Key: "objects", Title: "Objects"},
			{Key: "reason", Title: "Why"},
		},
		SortBy: []uitable.ColumnSort{{Column: 0, Asc: true}, {Column: 1, Asc: true}, {Column: 2, Asc: true},
			{Column: 3, Asc: true}, {Column: 4, Asc: true}},
	}
	for _, d := range dropped {
		table.Rows = append(table.Rows, []uitable.Value{
			uitable.NewValueString(d.CRD),
			uitable.NewValueString(d.Manager),
			uitable.NewValueString(d.Operation),
			uitable.NewValueString(d.Subresource),
			uitable.NewValueString(d.APIVersion),
			uitable.NewValueInt(d.Objects),
			uitable.NewValueString(d.Why()),
		})
	}
	return table
}
