package inputs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/gittest"
	"github.com/stretchr/testify/require"
)

// loadGitRef loads the new CRDs at paths in the work tree and the old ones
// at rev, and returns the old set with the notes LoadGitRef printed.
func loadGitRef(t *testing.T, rev string, paths ...string) (Set, []string, error) {
	t.Helper()
	_, newSet, err := LoadPair(nil, paths, nil)
	require.NoError(t, err)
	var notes []string
	oldSet, err := LoadGitRef(rev, paths, newSet, func(format string, args ...any) {
		notes = append(notes, fmt.Sprintf(format, args...))
	})
	return oldSet, notes, err
}

func originsOf(set Set) []string {
	var out []string
	for _, c := range set.CRDs {
		out = append(out, c.CRD.Name+" from "+c.Origin)
	}
	return out
}

// TestLoadGitRef: the old CRDs are the paths as they are at the revision,
// whatever the work tree holds now, and their findings point at the file
// at the revision.
func TestLoadGitRef(t *testing.T) {
	gittest.NewRepo(t, func(dir string) {
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
		gittest.Git(t, dir, "rm", "-q", "config/crds/sprockets.yaml")
	})

	oldSet, notes, err := loadGitRef(t, "main", "config/crds")
	require.NoError(t, err)
	require.Empty(t, notes)
	require.Equal(t, []string{
		"sprockets.example.com from file 'config/crds/sprockets.yaml' at main doc 1",
		"widgets.example.com from file 'config/crds/widgets.yaml' at main doc 1",
	}, originsOf(oldSet))
	require.Contains(t, oldSet.CRDs[1].CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "color", "the revision's widgets")

	newPos, oldPos := NewLocator(nil, oldSet.CRDs).Locate(Target{CRD: "sprockets.example.com", Check: "crdDeletion"})
	require.Equal(t, Position{}, newPos)
	require.Equal(t, Position{File: "config/crds/sprockets.yaml", Line: 1, Rev: "main"}, oldPos)
}

// TestLoadGitRefMoved: a CRD of the new inputs that the paths did not hold
// at the revision is looked for in the whole tree there, by name.
func TestLoadGitRefMoved(t *testing.T) {
	gittest.NewRepo(t, func(dir string) {
		require.NoError(t, os.Mkdir(filepath.Join(dir, "deploy"), 0o755))
		gittest.Git(t, dir, "mv", "config/crds/widgets.yaml", "deploy/widget-crd.yaml")
		gittest.WriteFiles(t, dir, map[string]string{"deploy/gadgets.yaml": gittest.CRDYAML("gadgets", "Gadget", "{name: {type: string}}")})
	})

	oldSet, notes, err := loadGitRef(t, "main", "deploy")
	require.NoError(t, err)
	require.Equal(t, []string{"widgets.example.com from file 'config/crds/widgets.yaml' at main doc 1"}, originsOf(oldSet),
		"gadgets is nowhere at main: new")
	require.Equal(t, []string{
		"old CRD widgets.example.com: not in the --file2 paths at main, read from config/crds/widgets.yaml there (moved)",
	}, notes)
}

func TestLoadGitRefErrors(t *testing.T) {
	gittest.NewRepo(t, nil)

	_, _, err := loadGitRef(t, "origin/nope", "config/crds")
	require.ErrorIs(t, err, ErrUnknownRevision)
	require.ErrorContains(t, err, `old CRDs at origin/nope: unknown git revision "origin/nope" in `)

	outside := t.TempDir()
	gittest.WriteFiles(t, outside, map[string]string{"crd.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV1)})
	_, _, err = loadGitRef(t, "main", filepath.Join(outside, "crd.yaml"))
	require.ErrorIs(t, err, ErrNotInGitRepository)
}
