package cmd

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/cmd/tools"
	"github.com/stretchr/testify/require"
)

func TestCRDMigrateStorageIsWiredLikeKappCommands(t *testing.T) {
	// Flags and input errors, before any cluster is contacted: exit status 1.
	_, err := execute(t, "tools", "crd-migrate-storage")
	require.EqualError(t, err, "expected at least one --crd or --file naming the CRDs to migrate")
	require.Equal(t, 1, ExitStatus(err))
	_, err = execute(t, "tools", "crd-migrate-storage", "-f", testdata+"config-warn.yaml")
	require.ErrorIs(t, err, tools.ErrNoCRDsToMigrate)
	require.Equal(t, 1, ExitStatus(err))

	// Extra arguments are rejected, as by every kapp leaf command.
	_, err = execute(t, "tools", "crd-migrate-storage", "--crd", "widgets.example.com", "widgets.example.com")
	require.ErrorContains(t, err, "does not accept extra arguments 'widgets.example.com'")

	// kapp's global flags reach it (--yes is one of them).
	out, err := execute(t, "tools", "crd-migrate-storage", "--help")
	require.NoError(t, err)
	for _, flag := range []string{"--crd strings", "-f, --file strings", "--to string", "--concurrency int", "--dry-run", "-y, --yes", "--json", "--tty"} {
		require.Contains(t, out, flag)
	}
}
