package inputs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/stretchr/testify/require"
)

func TestFileSourcesDirectory(t *testing.T) {
	srcs, err := fileSources(filepath.Dir(td("old.yaml")))
	require.NoError(t, err)
	var names []string
	for _, s := range srcs {
		names = append(names, s.Description())
	}
	require.Contains(t, names, "file '"+td("old.yaml")+"'")
	require.True(t, strings.HasPrefix(names[0], "file '"+td("config-bad.yaml")), "sorted: %v", names)
}

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
