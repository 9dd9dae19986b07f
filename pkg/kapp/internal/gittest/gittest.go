// Package gittest makes git repositories for the tests of --git-ref: git
// isolated from the machine's configuration, files written, commits made,
// and a repository of two example CRDs.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
)

// Env isolates git from the machine's configuration (signing, hooks,
// default branch) for the test and for the command under test.
func Env(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the --git-ref tests need git: %v", err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
}

// Git runs git in dir and returns its output; it fails the test when git
// fails.
func Git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// WriteFiles writes files (path relative to dir: content).
func WriteFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// CRDYAML is a CRD of group example.com with one version v1 whose spec has
// the given properties (a YAML flow mapping).
var CRDYAML = testcrd.CRDYAML

const (
	// WidgetsV1 are the spec properties of the widgets CRD in NewRepo.
	WidgetsV1 = "{size: {type: string, enum: [small, large]}, color: {type: string}}"
	// WidgetsV2 drops the enum value small and the field color.
	WidgetsV2 = "{size: {type: string, enum: [large]}}"
)

// NewRepo makes a git repository whose main branch holds config/crds/ with
// widgets and sprockets, changes its work tree with change, and makes it
// the test's current directory.
func NewRepo(t *testing.T, change func(dir string)) string {
	t.Helper()
	Env(t)
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	WriteFiles(t, dir, map[string]string{
		"config/crds/widgets.yaml":   CRDYAML("widgets", "Widget", WidgetsV1),
		"config/crds/sprockets.yaml": CRDYAML("sprockets", "Sprocket", "{teeth: {type: integer}}"),
		"README.md":                  "an operator\n",
	})
	Git(t, dir, "add", ".")
	Git(t, dir, "commit", "-q", "-m", "release 1")
	if change != nil {
		change(dir)
	}
	t.Chdir(dir)
	return dir
}
