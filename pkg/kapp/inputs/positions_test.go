package inputs

import (
	"bytes"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/stretchr/testify/require"
)

func positionsFile(name string) string { return filepath.Join("testdata", "positions", name) }

// markerLine is the line of file that holds marker: a "#@ name" comment in
// YAML, any unique text in JSON.
func markerLine(t *testing.T, file, marker string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	line := 0
	for i, l := range strings.Split(string(data), "\n") {
		text := l
		if strings.HasSuffix(file, ".yaml") {
			_, text, _ = strings.Cut(l, "#@ ")
			text = strings.TrimSpace(text)
		}
		if (strings.HasSuffix(file, ".yaml") && text == marker) || (!strings.HasSuffix(file, ".yaml") && strings.Contains(text, marker)) {
			require.Zero(t, line, "marker %q twice in %s", marker, file)
			line = i + 1
		}
	}
	require.NotZero(t, line, "no marker %q in %s", marker, file)
	return line
}

// TestLocate: the line of every kind of finding, in the new inputs and,
// for what they no longer have, in the old ones.
func TestLocate(t *testing.T) {
	newFiles := []string{positionsFile("new.yaml"), positionsFile("new.json")}
	newSet, err := Load(newFiles, "new")
	require.NoError(t, err)
	oldSet, err := Load([]string{positionsFile("old.yaml")}, "old")
	require.NoError(t, err)
	loc := NewLocator(newSet.CRDs, oldSet.CRDs)

	const widgets = "widgets.example.com"
	newYAML, newJSON, oldYAML := positionsFile("new.yaml"), positionsFile("new.json"), positionsFile("old.yaml")
	cases := []struct {
		name                string
		crd, version, field string
		check               string
		newFile, newMarker  string // "" : no location in the new inputs
		oldFile, oldMarker  string // "" : none in the old inputs
	}{
		{name: "CRD-level finding: the document", crd: widgets, check: "crdDeletion", newFile: newYAML, newMarker: "widgets"},
		{name: "scope: its field", crd: widgets, check: "scope", newFile: newYAML, newMarker: "scope"},
		{name: "version-level finding", crd: widgets, version: "v1", check: "existingResources", newFile: newYAML, newMarker: "v1"},
		{name: "schema root", crd: widgets, version: "v1", field: "^", check: "unhandled", newFile: newYAML, newMarker: "schema"},
		{name: "property", crd: widgets, version: "v1", field: "^.spec", check: "required", newFile: newYAML, newMarker: "spec"},
		{name: "nested property", crd: widgets, version: "v1", field: "^.spec.color", check: "enum", newFile: newYAML, newMarker: "color"},
		{name: "property name with a dot (quoted in the path), beside a shorter name that leads nowhere", crd: widgets, version: "v1", field: `^.spec["a.b"].c`,
			check: "unhandled", newFile: newYAML, newMarker: "a.b.c"},
		{name: "array items", crd: widgets, version: "v1", field: "^.spec.ports[*]", check: "unhandled", newFile: newYAML, newMarker: "ports-items"},
		{name: "property of array items", crd: widgets, version: "v1", field: "^.spec.ports[*].name", check: "unhandled", newFile: newYAML, newMarker: "ports-name"},
		{name: "the keyword of the check", crd: widgets, version: "v1", field: "^.spec.ports[*].name", check: "type",
			newFile: newYAML, newMarker: "ports-name-type"},
		{name: "the x-kubernetes keyword of the check", crd: widgets, version: "v1", field: "^.spec.ports", check: "listType",
			newFile: newYAML, newMarker: "ports-listtype"},
		{name: "a keyword the new schema lacks: the property", crd: widgets, version: "v1", field: "^.spec.ports", check: "maxItems",
			newFile: newYAML, newMarker: "ports"},
		{name: "map values", crd: widgets, version: "v1", field: "^.spec.labels{*}", check: "unhandled", newFile: newYAML, newMarker: "labels-values"},
		{name: "combinator branch", crd: widgets, version: "v1", field: "^.spec.choice.anyOf[0]", check: "unhandled", newFile: newYAML, newMarker: "anyOf0"},
		{name: "property in a combinator branch", crd: widgets, version: "v1", field: "^.spec.choice.anyOf[1].x", check: "unhandled", newFile: newYAML, newMarker: "anyOf1-x"},
		{name: "through a YAML alias: where the anchored schema is written", crd: widgets, version: "v1", field: "^.spec.second.deep",
			check: "unhandled", newFile: newYAML, newMarker: "deep"},
		{name: "apiserver field path", crd: widgets, field: "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[color].type",
			check: "apiserverRejects", newFile: newYAML, newMarker: "color"},
		{name: "apiserver field path shared by all versions", crd: widgets, field: "spec.versions[*].subresources",
			check: "apiserverRejects", newFile: newYAML, newMarker: "v2-subresources"},
		{name: "served version pair: the later version", crd: widgets, version: "v1 -> v2", field: "^.spec.onlyInV2",
			check: "servedVersion", newFile: newYAML, newMarker: "onlyInV2"},
		{name: "served version pair: what the later version lacks, in the earlier one", crd: widgets, version: "v1 -> v2", field: "^.spec.color",
			check: "servedVersion", newFile: newYAML, newMarker: "color"},
		{name: "removed field: its parent, and where it was", crd: widgets, version: "v1", field: "^.spec.removed",
			check: "existingFieldRemoval", newFile: newYAML, newMarker: "spec", oldFile: oldYAML, oldMarker: "old-removed"},
		{name: "removed version: the versions, and where it was", crd: widgets, version: "v0",
			check: "storedVersionRemoval", newFile: newYAML, newMarker: "versions", oldFile: oldYAML, oldMarker: "old-v0"},
		{name: "CRD dropped from the new inputs", crd: "dropped.example.com", check: "crdDeletion", oldFile: oldYAML, oldMarker: "old-dropped"},
		{name: "a path found nowhere: the closest part there is", crd: widgets, version: "v1", field: "^.spec.nope.deeper",
			check: "unhandled", newFile: newYAML, newMarker: "spec"},
		{name: "CRD in a List", crd: "gadgets.example.com", check: "crdDeletion", newFile: newYAML, newMarker: "gadgets"},
		{name: "flow style: the line of the flow mapping", crd: "gadgets.example.com", version: "v1", field: "^.spec",
			check: "type", newFile: newYAML, newMarker: "gadgets-spec"},
		{name: "JSON input", crd: "sprockets.example.com", version: "v1", field: "^.spec.size", check: "minimum", newFile: newJSON, newMarker: `"size"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := Target{CRD: tc.crd, Version: tc.version, Check: tc.check}
			if from, to, ok := strings.Cut(tc.version, " -> "); ok {
				target.Version, target.PairVersion = from, to
			}
			if strings.HasPrefix(tc.field, "^") {
				target.Field = schemapath.Path(tc.field)
			} else {
				target.CRDField = tc.field
			}
			newLoc, oldLoc := loc.Locate(target)
			want := Position{}
			if tc.newFile != "" {
				want = Position{File: filepath.ToSlash(tc.newFile), Line: markerLine(t, tc.newFile, tc.newMarker)}
			}
			require.Equal(t, want, newLoc, "new")
			want = Position{}
			if tc.oldFile != "" {
				want = Position{File: filepath.ToSlash(tc.oldFile), Line: markerLine(t, tc.oldFile, tc.oldMarker)}
			}
			require.Equal(t, want, oldLoc, "old")
		})
	}

	t.Run("each document is parsed once", func(t *testing.T) {
		require.Len(t, loc.nodes, 5, "widgets, the List, sprockets; old widgets and dropped")
	})
}

// TestLocateLazily: loading keeps no parsed document; a file is read again
// only when one of its CRDs has a finding, and an unreadable file (gone
// since) gives findings without a line, not an error.
func TestLocateLazily(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crd.yaml")
	data, err := os.ReadFile(positionsFile("new.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	set, err := Load([]string{path}, "new")
	require.NoError(t, err)
	loc := NewLocator(set.CRDs, nil)
	require.Empty(t, loc.files)

	require.NoError(t, os.Remove(path))
	newLoc, _ := loc.Locate(Target{CRD: "sprockets.example.com", Version: "v1", Field: "^.spec.size"})
	require.Equal(t, Position{File: displayPath(path)}, newLoc)
}

func TestDisplayPath(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	for in, want := range map[string]string{
		"testdata/a.yaml":                    "testdata/a.yaml",
		"./testdata//a.yaml":                 "testdata/a.yaml",
		filepath.Join(wd, "testdata/a.yaml"): "testdata/a.yaml",
		"/elsewhere/a.yaml":                  "/elsewhere/a.yaml",
		"../x/a.yaml":                        "../x/a.yaml",
		"https://example.com/crds/a.yaml":    "https://example.com/crds/a.yaml",
	} {
		require.Equal(t, want, displayPath(in), in)
	}
}

// TestDocStartLines: the first line of each document is that of the
// document kapp's YAML splitting yields, however separators, comments and
// blank lines fall.
func TestDocStartLines(t *testing.T) {
	cases := map[string][]int{
		"a: 1\n":                         {1},
		"a: 1":                           {1},
		"---\na: 1\n---\nb: 1\n":         {1, 4}, // a leading separator belongs to the document
		"# c\n---\na: 1\n":               {1, 3},
		"---\n---\na: 1\n--- # x\n\nb\n": {1, 3, 5},
		"a: 1\r\n---\r\nb: 2\r\n":        {1, 3},
		"":                               nil,
		"---\n":                          {1},
		"a: |\n  ---x\n":                 {1}, // not at the line start: no separator
	}
	for in, want := range cases {
		require.Equal(t, want, docStartLines([]byte(in)), "%q", in)
		requireSameSplit(t, []byte(in))
	}
}

// FuzzDocStartLines: docStartLines agrees with kapp's splitting.
func FuzzDocStartLines(f *testing.F) {
	for _, s := range []string{"a: 1\n---\nb: 2\n", "---\n\n---\n# c\nx", "a\r\n---  \r\nb", "----\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { requireSameSplit(t, data) })
}

func requireSameSplit(t *testing.T, data []byte) {
	t.Helper()
	docs, err := ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs()
	if err != nil {
		return // an invalid separator: the input is refused before positions matter
	}
	starts := docStartLines(data)
	require.Len(t, starts, len(docs), "%q", data)
	lines := bytes.Split(data, []byte("\n"))
	for i, d := range docs {
		first, _, _ := bytes.Cut(d, []byte("\n"))
		want := bytes.TrimSuffix(lines[starts[i]-1], []byte("\r"))
		require.Equal(t, string(want), string(bytes.TrimSuffix(first, []byte("\r"))), "doc %d of %q", i, data)
	}
}
