package inputs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/gittest"
	"github.com/stretchr/testify/require"
)

// loadGitRef loads the new CRDs at paths in the work tree and the old ones
// at rev, and returns the old set with the notes LoadGitRef printed.
func loadGitRef(t *testing.T, rev string, paths ...string) (Set, []string, error) {
	t.Helper()
	set, _, notes, err := loadGitBaseline(t, rev, false, paths...)
	return set, notes, err
}

// loadGitBaseline is loadGitRef with the baseline, at the merge base or
// the tip.
func loadGitBaseline(t *testing.T, rev string, tip bool, paths ...string) (Set, Baseline, []string, error) {
	t.Helper()
	_, newSet, err := LoadPair(nil, paths, nil)
	require.NoError(t, err)
	var notes []string
	oldSet, b, err := LoadGitRef(rev, tip, paths, newSet, func(format string, args ...any) {
		notes = append(notes, fmt.Sprintf(format, args...))
	})
	return oldSet, b, notes, err
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

// TestLoadGitRefMergeBase: by default the old CRDs are read at the merge
// base of the revision and HEAD, so what the base branch did after the
// branch point (openstack-k8s-operators#1201: main adds a field the branch
// never had) is not taken for the branch removing it; with tip, at the
// revision itself.
func TestLoadGitRefMergeBase(t *testing.T) {
	var branchPoint, mainTip string
	gittest.NewRepo(t, func(dir string) {
		branchPoint = strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		gittest.Git(t, dir, "checkout", "-q", "-b", "feature")
		gittest.WriteFiles(t, dir, map[string]string{"README.md": "the branch\n"})
		gittest.Git(t, dir, "commit", "-q", "-am", "on the branch")
		gittest.Git(t, dir, "checkout", "-q", "main")
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget",
			"{size: {type: string, enum: [small, large]}, color: {type: string}, shape: {type: string}}")})
		gittest.Git(t, dir, "commit", "-q", "-am", "main adds shape")
		mainTip = strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		gittest.Git(t, dir, "checkout", "-q", "feature")
	})
	shapeAt := func(set Set) bool {
		for _, c := range set.CRDs {
			if c.CRD.Name == "widgets.example.com" {
				_, ok := c.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["shape"]
				return ok
			}
		}
		t.Fatal("no widgets")
		return false
	}

	set, b, _, err := loadGitBaseline(t, "main", false, "config/crds")
	require.NoError(t, err)
	require.Equal(t, Baseline{Ref: "main", Commit: branchPoint, MergeBase: true}, b)
	require.Equal(t, branchPoint[:12], b.Rev())
	require.False(t, shapeAt(set), "read at the branch point")
	require.Equal(t, "widgets.example.com from file 'config/crds/widgets.yaml' at "+branchPoint[:12]+" doc 1", originsOf(set)[1])

	set, b, _, err = loadGitBaseline(t, "main", true, "config/crds")
	require.NoError(t, err)
	require.Equal(t, Baseline{Ref: "main", Commit: mainTip}, b)
	require.Equal(t, "main", b.Rev())
	require.True(t, shapeAt(set), "read at main's tip")

	t.Run("a revision HEAD descends from is its own merge base", func(t *testing.T) {
		_, b, _, err := loadGitBaseline(t, branchPoint[:10], false, "config/crds")
		require.NoError(t, err)
		require.Equal(t, Baseline{Ref: branchPoint[:10], Commit: branchPoint}, b)
	})
}

func TestLoadGitRefNoMergeBase(t *testing.T) {
	dir := gittest.NewRepo(t, nil)
	gittest.Git(t, dir, "checkout", "-q", "--orphan", "unrelated")
	gittest.Git(t, dir, "commit", "-q", "-m", "another history")
	gittest.Git(t, dir, "checkout", "-q", "main")

	_, _, _, err := loadGitBaseline(t, "unrelated", false, "config/crds")
	require.ErrorIs(t, err, ErrNoMergeBase)
	require.EqualError(t, err, "old CRDs at unrelated: no merge base: unrelated and HEAD share no history (unrelated histories); "+
		"compare with the tip of unrelated (--git-ref-tip)")

	_, b, _, err := loadGitBaseline(t, "unrelated", true, "config/crds")
	require.NoError(t, err, "the tip needs no merge base")
	require.False(t, b.MergeBase)
}

// TestLoadGitRefShallow: a shallow clone that has the base's tip but not
// the history down to the merge base says to fetch the history.
func TestLoadGitRefShallow(t *testing.T) {
	upstream := gittest.NewRepo(t, func(dir string) {
		gittest.Git(t, dir, "checkout", "-q", "-b", "pr")
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
		gittest.Git(t, dir, "commit", "-q", "-am", "release 2")
		gittest.Git(t, dir, "checkout", "-q", "main")
		gittest.WriteFiles(t, dir, map[string]string{"README.md": "main moves on\n"})
		gittest.Git(t, dir, "commit", "-q", "-am", "main moves on")
	})
	shallow := filepath.Join(t.TempDir(), "shallow")
	gittest.Git(t, ".", "clone", "-q", "--depth", "1", "--no-single-branch", "--branch", "pr", "file://"+upstream, shallow)
	t.Chdir(shallow)

	_, _, _, err := loadGitBaseline(t, "origin/main", false, "config/crds")
	require.ErrorIs(t, err, ErrShallowClone)
	require.ErrorContains(t, err, "origin/main and HEAD have no merge base in the history this clone has: "+
		"fetch the whole history (actions/checkout with fetch-depth: 0, or git fetch --unshallow)")

	gittest.Git(t, ".", "fetch", "-q", "--unshallow")
	_, b, _, err := loadGitBaseline(t, "origin/main", false, "config/crds")
	require.NoError(t, err)
	require.True(t, b.MergeBase)
}

// TestLoadGitStaged: --git-staged reads the paths as staged in the index,
// not as they are on disk; their findings point at the file on disk.
func TestLoadGitStaged(t *testing.T) {
	gittest.NewRepo(t, func(dir string) {
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
		gittest.Git(t, dir, "add", "config/crds/widgets.yaml")
		// Unstaged: the work tree differs from what is staged.
		gittest.WriteFiles(t, dir, map[string]string{
			"config/crds/widgets.yaml": "# not staged\n" + gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV1),
			"config/crds/new.yaml":     gittest.CRDYAML("gadgets", "Gadget", "{name: {type: string}}"),
		})
	})
	set, err := LoadGitStaged([]string{"config/crds"})
	require.NoError(t, err)
	require.Equal(t, []string{
		"sprockets.example.com from file 'config/crds/sprockets.yaml' staged doc 1",
		"widgets.example.com from file 'config/crds/widgets.yaml' staged doc 1",
	}, originsOf(set), "the unstaged new.yaml is not read")
	require.NotContains(t, set.CRDs[1].CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "color", "the staged widgets")

	newPos, _ := NewLocator(set.CRDs, nil).Locate(Target{CRD: "widgets.example.com"})
	require.Equal(t, Position{File: "config/crds/widgets.yaml", Line: 1}, newPos, "the staged content's line, the file on disk")

	_, err = LoadGitStaged([]string{"config/crds/new.yaml"})
	require.NoError(t, err, "a file with nothing staged holds nothing")
}
