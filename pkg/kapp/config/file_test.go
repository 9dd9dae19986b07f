package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestParseFile(t *testing.T) {
	raw, err := config.ParseFile([]byte("# only a comment\n"))
	require.NoError(t, err)
	require.Empty(t, raw)
	raw, err = config.ParseFile([]byte("---\nmode: warn\n---\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"mode": "warn"}, raw)
	_, err = config.ParseFile([]byte("[1, 2]"))
	require.ErrorContains(t, err, "got a list")
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	require.NoError(t, os.WriteFile(path, []byte("mode: warn\n"), 0o644))
	cfg, raw, err := config.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, config.ModeWarn, cfg.Mode)
	require.Equal(t, map[string]any{"mode": "warn"}, raw)

	require.NoError(t, os.WriteFile(path, []byte("mode: sometimes\n"), 0o644))
	_, _, err = config.ReadFile(path)
	require.ErrorIs(t, err, config.ErrInvalidConfig)
	require.ErrorContains(t, err, "file "+path+": mode: unknown value")

	_, _, err = config.ReadFile(path + ".missing")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "file "+path+".missing: open ")
}
