package migration

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMigrationHasNoUI: the migration hands facts to its UI (run.go);
// printing, tables and confirmation are the command's
// (pkg/kapp/cmd/tools, crd_migrate_storage_output.go). The package, its
// tests aside, imports no terminal UI library.
func TestMigrationHasNoUI(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, ".").Output()
	require.NoError(t, err)
	for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		for _, ui := range []string{"github.com/cppforlife/go-cli-ui", "carvel.dev/kapp/pkg/kapp/cmd"} {
			require.False(t, dep == ui || strings.HasPrefix(dep, ui+"/"), "pkg/kapp/migration depends on %s: its output belongs to the command", dep)
		}
	}
}
