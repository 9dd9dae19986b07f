package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/internal/gittest"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
)

func gitOptions(output, ref string, new ...string) *CRDUpgradeSafetyOptions {
	o := outputOptions(output, nil, new)
	o.FileFlags.GitRefs = []string{ref}
	return o
}

// gitRun runs the command with --output json and returns the report.
func gitRun(t *testing.T, ref string, new ...string) (report.Report, string, error) {
	t.Helper()
	stdout, stderr, err := runOutput(t, gitOptions(OutputJSON, ref, new...))
	var r report.Report
	if stdout != "" {
		require.NoError(t, json.Unmarshal([]byte(stdout), &r), stdout)
	}
	return r, stderr, err
}

// findingsOf renders a report's findings as "crd check field @ file:line
// (was oldFile:oldLine at rev)" lines.
func findingsOf(r report.Report) []string {
	var out []string
	for _, c := range r.CRDs {
		for _, f := range c.Findings {
			s := fmt.Sprintf("%s %s %s @ %s:%d", f.CRD, f.Check, f.Field, f.File, f.Line)
			if f.OldFile != "" {
				s += fmt.Sprintf(" (was %s:%d at %s)", f.OldFile, f.OldLine, f.OldRevision)
			}
			out = append(out, s)
		}
	}
	return out
}

// TestGitRef: the old CRDs are the --file2 paths at the revision: the
// changes of the work tree (committed on a branch or not) are compared
// with them, a CRD deleted since is a crdDeletion, and findings carry the
// file and line in the work tree and, for removals, at the revision.
func TestGitRef(t *testing.T) {
	gittest.NewRepo(t, func(dir string) {
		gittest.Git(t, dir, "checkout", "-q", "-b", "feature")
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
		gittest.Git(t, dir, "rm", "-q", "config/crds/sprockets.yaml")
		gittest.Git(t, dir, "commit", "-q", "-am", "release 2")
	})

	r, stderr, err := gitRun(t, "main", "config/crds/")
	requireUnsafe(t, err)
	require.Empty(t, stderr)
	require.Equal(t, []string{
		"sprockets.example.com crdDeletion  @ :0 (was config/crds/sprockets.yaml:1 at main)",
		"widgets.example.com existingFieldRemoval ^.spec.color @ config/crds/widgets.yaml:17 (was config/crds/widgets.yaml:19 at main)",
		"widgets.example.com enum ^.spec.size @ config/crds/widgets.yaml:19",
	}, findingsOf(r))

	t.Run("the same with the revision as a commit and the path as a file", func(t *testing.T) {
		head := strings.TrimSpace(gittest.Git(t, ".", "rev-parse", "main"))
		r, _, err := gitRun(t, head[:12], "config/crds/widgets.yaml")
		requireUnsafe(t, err)
		require.Len(t, findingsOf(r), 2, "no crdDeletion: only widgets.yaml is compared")
	})

	t.Run("against itself: safe", func(t *testing.T) {
		r, _, err := gitRun(t, "HEAD", "config/crds")
		require.NoError(t, err)
		require.True(t, r.Safe)
		require.Len(t, r.CRDs, 1)
	})

	t.Run("--objects: samples from the work tree", func(t *testing.T) {
		gittest.WriteFiles(t, ".", map[string]string{"config/samples/widget.yaml": "apiVersion: example.com/v1\nkind: Widget\n" +
			"metadata: {name: w, namespace: default}\nspec: {size: small, color: red}\n"})
		t.Cleanup(func() { require.NoError(t, os.RemoveAll("config/samples")) })
		o := gitOptions(OutputJSON, "main", "config/crds/")
		o.FileFlags.Objects = []string{"config/samples/"}
		stdout, _, err := runOutput(t, o)
		requireUnsafe(t, err)
		var r report.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &r), stdout)
		var messages []string
		for _, c := range r.CRDs {
			for _, f := range c.Findings {
				messages = append(messages, f.Check+": "+f.Message)
				if f.CRD == "widgets.example.com" {
					require.NotNil(t, f.Impact, f.Message)
					require.Equal(t, 1, f.Impact.Affected, f.Message)
				}
			}
		}
		require.Contains(t, messages, `existingFieldRemoval: data loss: existing field removed (was string): 1 of 1 sample Widget holds data here, pruned when applied: default/w ("red")`)
	})

	t.Run("uncommitted changes count", func(t *testing.T) {
		gittest.WriteFiles(t, ".", map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV1)})
		t.Cleanup(func() { gittest.Git(t, ".", "checkout", "-q", "--", "config/crds/widgets.yaml") })
		r, _, err := gitRun(t, "main", "config/crds")
		requireUnsafe(t, err)
		require.Equal(t, []string{"sprockets.example.com crdDeletion  @ :0 (was config/crds/sprockets.yaml:1 at main)"}, findingsOf(r))
	})
}

// TestGitRefMovedCRD: a CRD whose file was renamed or moved out of the
// --file2 paths is found at the revision by its name, so it is compared
// (and not taken for a new CRD); a file that mentions the name but does not
// decode is skipped.
func TestGitRefMovedCRD(t *testing.T) {
	gittest.NewRepo(t, func(dir string) {
		gittest.WriteFiles(t, dir, map[string]string{
			// Mentions widgets.example.com, and is no Kubernetes manifest.
			".github/workflows/crds.yaml": "on: push\njobs: {check: {steps: [{run: 'echo widgets.example.com {{ .Values }}: ['}]}}\n",
		})
		gittest.Git(t, dir, "add", ".")
		gittest.Git(t, dir, "commit", "-q", "-m", "a workflow")
		require.NoError(t, os.Mkdir(filepath.Join(dir, "deploy"), 0o755))
		gittest.Git(t, dir, "mv", "config/crds/widgets.yaml", "deploy/widget-crd.yaml")
		gittest.Git(t, dir, "mv", "config/crds/sprockets.yaml", "deploy/sprockets.yaml")
		gittest.WriteFiles(t, dir, map[string]string{"deploy/widget-crd.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
	})

	r, stderr, err := gitRun(t, "main", "deploy")
	requireUnsafe(t, err)
	require.Equal(t, []string{
		"widgets.example.com existingFieldRemoval ^.spec.color @ deploy/widget-crd.yaml:17 (was config/crds/widgets.yaml:19 at main)",
		"widgets.example.com enum ^.spec.size @ deploy/widget-crd.yaml:19",
	}, findingsOf(r))
	require.Contains(t, stderr, "old CRD widgets.example.com: not in the --file2 paths at main, read from config/crds/widgets.yaml there (moved)")
	require.Contains(t, stderr, "old CRD sprockets.example.com: not in the --file2 paths at main, read from config/crds/sprockets.yaml there (moved)")

	t.Run("a CRD nowhere at the revision is new", func(t *testing.T) {
		gittest.WriteFiles(t, ".", map[string]string{"deploy/gadgets.yaml": gittest.CRDYAML("gadgets", "Gadget", "{name: {type: string}}")})
		r, _, err := gitRun(t, "main", "deploy/gadgets.yaml")
		require.NoError(t, err)
		require.True(t, r.Safe)
	})

	t.Run("a path that did not exist at the revision", func(t *testing.T) {
		gittest.WriteFiles(t, ".", map[string]string{"new/dir/gadgets.yaml": gittest.CRDYAML("gadgets", "Gadget", "{name: {type: string}}")})
		r, _, err := gitRun(t, "main", "new/dir")
		require.NoError(t, err)
		require.True(t, r.Safe)
	})
}

// TestGitRefSubdirectory: run from a subdirectory of the repository, paths
// are relative to it, as for files on disk.
func TestGitRefSubdirectory(t *testing.T) {
	dir := gittest.NewRepo(t, func(dir string) {
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
	})
	t.Chdir(filepath.Join(dir, "config"))
	r, _, err := gitRun(t, "main", "crds/widgets.yaml")
	requireUnsafe(t, err)
	require.Equal(t, []string{
		"widgets.example.com existingFieldRemoval ^.spec.color @ crds/widgets.yaml:17 (was crds/widgets.yaml:19 at main)",
		"widgets.example.com enum ^.spec.size @ crds/widgets.yaml:19",
	}, findingsOf(r))
}

func TestGitRefErrors(t *testing.T) {
	dir := gittest.NewRepo(t, nil)

	t.Run("unknown revision", func(t *testing.T) {
		_, _, err := gitRun(t, "origin/nope", "config/crds")
		requirePlainError(t, err)
		require.ErrorIs(t, err, inputs.ErrUnknownRevision)
		require.ErrorContains(t, err, `old CRDs at origin/nope: unknown git revision "origin/nope" in `)
		require.ErrorContains(t, err, "fetch-depth: 0")
	})
	t.Run("an option is no revision", func(t *testing.T) {
		_, _, err := gitRun(t, "--output=/tmp/x", "config/crds")
		require.ErrorIs(t, err, inputs.ErrUnknownRevision)
	})
	t.Run("outside a repository", func(t *testing.T) {
		outside := t.TempDir()
		gittest.WriteFiles(t, outside, map[string]string{"crd.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV1)})
		_, _, err := gitRun(t, "main", filepath.Join(outside, "crd.yaml"))
		requirePlainError(t, err)
		require.ErrorIs(t, err, inputs.ErrNotInGitRepository)
		require.ErrorContains(t, err, filepath.Join(outside, "crd.yaml")+" is not in a git repository")
	})
	t.Run("with --file", func(t *testing.T) {
		o := gitOptions(OutputTable, "main", "config/crds")
		o.FileFlags.OldFiles = []string{"config/crds"}
		_, _, err := runOutput(t, o)
		requirePlainError(t, err)
		require.EqualError(t, err, "expected either --file or --git-ref for the old CRDs, not both (--git-ref reads the --file2 paths at that revision)")
	})
	t.Run("standard input", func(t *testing.T) {
		_, _, err := gitRun(t, "main", "-")
		requirePlainError(t, err)
		require.ErrorContains(t, err, `"-" is not a path in a git work tree`)
	})
	t.Run("an old file that does not decode", func(t *testing.T) {
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/broken.yaml": "kind: [\n"})
		gittest.Git(t, dir, "add", ".")
		gittest.Git(t, dir, "commit", "-q", "-m", "broken")
		gittest.Git(t, dir, "rm", "-q", "config/crds/broken.yaml")
		_, _, err := gitRun(t, "HEAD", "config/crds")
		requirePlainError(t, err)
		require.ErrorContains(t, err, "old CRDs at HEAD: file 'config/crds/broken.yaml' at HEAD doc 1: invalid input: not valid YAML")
	})
}
