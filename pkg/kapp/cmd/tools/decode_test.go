package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// decodeCorpus lists the YAML and JSON files the decoding tests read: the
// real CRDs of hack/fetch-crds.sh (.cache/crds, when fetched) and the
// repository's CRD test data and examples.
func decodeCorpus(t *testing.T) []string {
	t.Helper()
	var files []string
	roots := []string{"../../../../.cache/crds", "testdata", "../../../../examples",
		"../../../../pkg/kapp/crdupgradesafety/testdata", "../../../../test/e2e/testdata"}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				for _, ext := range fileExts {
					if filepath.Ext(path) == ext {
						files = append(files, path)
					}
				}
			}
			return nil
		})
	}
	if !strings.HasPrefix(strings.Join(files, "\n"), "../../../../.cache/crds") {
		t.Log("no real CRDs in .cache/crds (run hack/fetch-crds.sh): only the repository's test data is decoded")
	}
	require.NotEmpty(t, files)
	return files
}

// TestDecodeLikeTheOldDecoder decodes every document of the corpus with
// the streaming YAML conversion and with sigs.k8s.io/yaml.YAMLToJSON (the
// decoder before it): the CRDs, kapp Config resources and errors must be
// the same, deep-equal.
func TestDecodeLikeTheOldDecoder(t *testing.T) {
	docs := 0
	for _, f := range decodeCorpus(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		split, err := ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs()
		if err != nil {
			continue
		}
		for i, d := range split {
			doc := rawDoc{origin: fmt.Sprintf("%s doc %d", f, i+1), data: d}
			crds, configs, err := decodeDoc(doc)
			yamlToJSON = yaml.YAMLToJSON
			wantCRDs, wantConfigs, wantErr := decodeDoc(doc)
			yamlToJSON = defaultYAMLToJSON
			docs++

			require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(err), doc.origin)
			require.Len(t, crds, len(wantCRDs), doc.origin)
			for j := range crds {
				require.Equal(t, wantCRDs[j].origin, crds[j].origin)
				if !reflect.DeepEqual(wantCRDs[j].crd, crds[j].crd) {
					t.Fatalf("%s: the CRD differs from the old decoder's", crds[j].origin)
				}
			}
			require.Len(t, configs, len(wantConfigs), doc.origin)
			for j := range configs {
				require.Equal(t, wantConfigs[j].UnstructuredObject(), configs[j].UnstructuredObject(), doc.origin)
			}
		}
	}
	t.Logf("%d documents decoded alike", docs)
}

var defaultYAMLToJSON = yamlToJSON

// TestSplitDocsLikeKapp: documents are split as kapp splits them (the
// same bytes, the same errors), as slices of the file when it can.
func TestSplitDocsLikeKapp(t *testing.T) {
	inputs := []string{
		"", "\n", "a: 1\n", "a: 1", "---\na: 1\n", "a: 1\n---\nb: 2\n", "---\n---\na: 1\n", "a: 1\n---\n---\nb: 2\n---\n",
		"a: 1\n--- # comment\nb: 2\n", "a: 1\n---   \nb: 2\n", "a: 1\n----\nb: 2\n", "a: 1\n--- b\n", "a: 1\r\n---\r\nb: 2\r\n",
		"# only a comment\n", "a: |\n  ---\n", " ---\n", "---", "a: 1\n---",
	}
	for _, f := range decodeCorpus(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		inputs = append(inputs, string(data))
	}
	for _, in := range inputs {
		requireSplitLikeKapp(t, []byte(in))
	}
}

func requireSplitLikeKapp(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := ctlres.NewYAMLFile(ctlres.NewBytesSource(data)).Docs()
	got, err := splitDocs(data)
	require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(err), "%q", data)
	require.Equal(t, len(want), len(got), "%q", data)
	for i := range want {
		require.Equal(t, string(want[i]), string(got[i]), "%q doc %d", data, i+1)
	}
}

func FuzzSplitDocs(f *testing.F) {
	f.Add([]byte("a: 1\n---\nb: 2\n"))
	f.Add([]byte("---\n--- #c\n----\n"))
	f.Fuzz(requireSplitLikeKapp)
}

// TestIdenticalDocumentsDecodedOnce: a document found twice (on both
// sides, or twice on one side) is decoded once: its CRDs are the same
// objects, each with its own origin. A changed document is decoded on its
// own; a failing one is reported with its own origin.
func TestIdenticalDocumentsDecodedOnce(t *testing.T) {
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(readTD(t, "sprockets.yaml")), "\n", "\n  ") + "\n"
	old := writeTemp(t, "old.yaml", readTD(t, "old.yaml")+"---\n"+list)
	new := writeTemp(t, "new.yaml", list+"---\n"+readTD(t, "new-safe.yaml"))

	o := NewCRDUpgradeSafetyOptions(nil, nil)
	o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: []string{old}, NewFiles: []string{new}}
	newSet, oldSet, err := o.load()
	require.NoError(t, err)
	require.Len(t, oldSet.crds, 2)
	require.Len(t, newSet.crds, 3) // sprockets, then widgets and gadgets of new-safe.yaml

	oldWidgets, oldSprockets := oldSet.crds[0], oldSet.crds[1]
	newSprockets, newWidgets := newSet.crds[0], newSet.crds[1]
	require.Equal(t, "sprockets.example.com", newSprockets.crd.Name)
	require.Equal(t, "widgets.example.com", newWidgets.crd.Name)
	require.Same(t, oldSprockets.crd, newSprockets.crd, "the same list document: decoded once")
	require.Equal(t, "file '"+old+"' doc 3 item 1", oldSprockets.origin)
	require.Equal(t, "file '"+new+"' doc 1 item 1", newSprockets.origin)
	require.NotSame(t, oldWidgets.crd, newWidgets.crd, "changed: decoded on its own")
	require.Equal(t, "file '"+new+"' doc 2", newWidgets.origin)

	// Twice on one side: a duplicate, named with both origins.
	_, err = loadInputs([]string{new, new}, "new")
	require.ErrorIs(t, err, ErrInvalidInput)
	require.ErrorContains(t, err, "duplicate CustomResourceDefinition sprockets.example.com in new files: file '"+new+"' doc 1 item 1 and file '"+new+"' doc 1 item 1")

	// A failing document found twice: the error names the first.
	bad := writeTemp(t, "bad.yaml", readTD(t, "undecodable.yaml"))
	o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: []string{old}, NewFiles: []string{new, bad, bad}}
	_, _, err = o.load()
	require.ErrorIs(t, err, ErrInvalidInput)
	require.ErrorContains(t, err, "new CRDs: file '"+bad+"' doc 1")
}

func readTD(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(td(name))
	require.NoError(t, err)
	return string(b)
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}
