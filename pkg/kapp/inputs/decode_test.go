package inputs

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

// td is a file of the tools command's test data, which these tests share.
func td(name string) string {
	return filepath.Join("..", "cmd", "tools", "testdata", "crd-upgrade-safety", name)
}

// decodeCorpus lists the YAML and JSON files the decoding tests read: the
// real CRDs of hack/fetch-crds.sh (.cache/crds, when fetched) and the
// repository's CRD test data and examples.
func decodeCorpus(t *testing.T) []string {
	t.Helper()
	var files []string
	roots := []string{"../../../.cache/crds", "testdata", "../cmd/tools/testdata", "../../../examples",
		"../../../pkg/kapp/crdupgradesafety/testdata", "../../../test/e2e/testdata"}
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
	if !strings.HasPrefix(strings.Join(files, "\n"), "../../../.cache/crds") {
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
				require.Equal(t, wantCRDs[j].Origin, crds[j].Origin)
				if !reflect.DeepEqual(wantCRDs[j].CRD, crds[j].CRD) {
					t.Fatalf("%s: the CRD differs from the old decoder's", crds[j].Origin)
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

// TestIdenticalDocumentsDecodedOnce: a document found twice (on both
// sides, or twice on one side) is decoded once: its CRDs are the same
// objects, each with its own origin. A changed document is decoded on its
// own; a failing one is reported with its own origin.
func TestIdenticalDocumentsDecodedOnce(t *testing.T) {
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(readTD(t, "sprockets.yaml")), "\n", "\n  ") + "\n"
	old := writeTemp(t, "old.yaml", readTD(t, "old.yaml")+"---\n"+list)
	new := writeTemp(t, "new.yaml", list+"---\n"+readTD(t, "new-safe.yaml"))

	oldSet, newSet, err := LoadPair([]string{old}, []string{new}, nil)
	require.NoError(t, err)
	require.Len(t, oldSet.CRDs, 2)
	require.Len(t, newSet.CRDs, 3) // sprockets, then widgets and gadgets of new-safe.yaml

	oldWidgets, oldSprockets := oldSet.CRDs[0], oldSet.CRDs[1]
	newSprockets, newWidgets := newSet.CRDs[0], newSet.CRDs[1]
	require.Equal(t, "sprockets.example.com", newSprockets.CRD.Name)
	require.Equal(t, "widgets.example.com", newWidgets.CRD.Name)
	require.Same(t, oldSprockets.CRD, newSprockets.CRD, "the same list document: decoded once")
	require.Equal(t, "file '"+old+"' doc 3 item 1", oldSprockets.Origin)
	require.Equal(t, "file '"+new+"' doc 1 item 1", newSprockets.Origin)
	require.NotSame(t, oldWidgets.CRD, newWidgets.CRD, "changed: decoded on its own")
	require.Equal(t, "file '"+new+"' doc 2", newWidgets.Origin)

	// Twice on one side: a duplicate, named with both origins.
	_, err = Load([]string{new, new}, "new")
	require.ErrorIs(t, err, ErrInvalidInput)
	require.ErrorContains(t, err, "duplicate CustomResourceDefinition sprockets.example.com in new files: file '"+new+"' doc 1 item 1 and file '"+new+"' doc 1 item 1")

	// A failing document found twice: the error names the first.
	bad := writeTemp(t, "bad.yaml", readTD(t, "undecodable.yaml"))
	_, _, err = LoadPair([]string{old}, []string{new, bad, bad}, nil)
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

// Real CRDs come from hack/fetch-crds.sh (git-ignored .cache/crds).
var benchDir = filepath.Join("..", "..", "..", ".cache", "crds", "prometheus-operator")

func benchFiles(b *testing.B) []string {
	files, _ := filepath.Glob(filepath.Join(benchDir, "*.yaml"))
	if len(files) == 0 {
		b.Skip("no real CRDs: run hack/fetch-crds.sh")
	}
	return files
}

// BenchmarkDecodeCRDs decodes the same CRDs, already converted to JSON,
// into typed CRDs as the command does: the JSON decoding alone, without
// reading files, YAML conversion or validation.
func BenchmarkDecodeCRDs(b *testing.B) {
	var docs [][]byte
	for _, f := range benchFiles(b) {
		bs, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		js, _, err := toJSON(bs)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, js)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, js := range docs {
			crds, _, err := decodeObject(js, "doc")
			if err != nil || len(crds) != 1 {
				b.Fatalf("doc %d: %d CRDs, %v", j, len(crds), err)
			}
		}
	}
}

// TestDecodeNumberAnnotation: an annotation written unquoted that YAML
// reads as a number (a waive-fingerprints list of one fingerprint of
// digits, or digits and one e) is an error naming the annotation and
// saying to quote it; quoted, the CRD decodes with the text as written.
func TestDecodeNumberAnnotation(t *testing.T) {
	crd := func(value string) []byte {
		return []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n" +
			"  annotations:\n    crd-upgrade-safety.kapp.k14s.io/waive-reason: reviewed\n" +
			"    crd-upgrade-safety.kapp.k14s.io/waive-fingerprints: " + value + "\n" +
			"spec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n" +
			"  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n")
	}
	for _, tc := range []struct{ name, value, errSubstring string }{
		{"e-notation", "94583743e021", `metadata.annotations[crd-upgrade-safety.kapp.k14s.io/waive-fingerprints] is a number, not a string`},
		{"all digits", "123456789012", `quote it: "crd-upgrade-safety.kapp.k14s.io/waive-fingerprints: \"...\""`},
		{"leading zeros", "001234567012", `is a number, not a string`},
		{"quoted e-notation", `"94583743e021"`, ""},
		{"quoted digits", `"000123456789"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crds, _, err := decodeDoc(rawDoc{origin: "crd.yaml doc 1", data: crd(tc.value)})
			if tc.errSubstring != "" {
				require.ErrorIs(t, err, ErrInvalidInput)
				require.ErrorContains(t, err, tc.errSubstring)
				return
			}
			require.NoError(t, err)
			require.Len(t, crds, 1)
			require.Equal(t, strings.Trim(tc.value, `"`), crds[0].CRD.Annotations["crd-upgrade-safety.kapp.k14s.io/waive-fingerprints"])
		})
	}
}
