// Package testcrd holds the Widget CRD that unit tests of the evaluation
// service and of the kapp preflight hook compare in a few releases.
package testcrd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Header is a namespaced CRD of group example.com named after plural and
// kind, up to its versions key: the versions follow as YAML list items
// indented by two spaces.
func Header(plural, kind string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.example.com
spec:
  group: example.com
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[1]s, singular: %[3]s}
  scope: Namespaced
  versions:`, plural, kind, strings.ToLower(kind))
}

// CRDYAML is a CRD of Header with one version v1 whose spec has the given
// properties (a YAML flow mapping).
func CRDYAML(plural, kind, props string) string {
	return Header(plural, kind) + versionV1(" "+props)
}

// WidgetCRD is a Widget CRD whose spec.color enum and spec.size minimum vary.
func WidgetCRD(enum string, minimum int) string {
	return "\n" + Header("widgets", "Widget") + versionV1(fmt.Sprintf(`
              size: {type: integer, minimum: %d}
              color: {type: string, enum: [%s]}`, minimum, enum)) + `status:
  storedVersions: [v1]
`
}

// versionV1 is a versions item v1, served and stored, whose spec's
// properties follow "properties:" (a flow mapping after a space, or block
// lines).
func versionV1(props string) string {
	return `
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:` + props + "\n"
}

var (
	// OldCRD is the Widget CRD on the cluster.
	OldCRD = WidgetCRD("red, green, blue", 1)
	// UnsafeCRD removes an enum value and raises the minimum.
	UnsafeCRD = WidgetCRD("red, green", 5)
	// SafeCRD adds an enum value.
	SafeCRD = WidgetCRD("red, green, blue, yellow", 1)
)

// MustCRD decodes a CRD from YAML, as kapp decodes the files it deploys
// (unknown fields dropped).
func MustCRD(t testing.TB, doc string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(doc), crd); err != nil {
		t.Fatalf("decoding CRD: %v", err)
	}
	return crd
}

// Pair is a case of the engine's testdata: the old and the new CRD of one
// of its directories.
type Pair struct {
	Dir      string
	Old, New *apiextv1.CustomResourceDefinition
}

// Pairs are the cases of the engine's testdata directory (its path from
// the test's package): the directories whose old.yaml and new.yaml each
// hold one CRD. The others (a CRD created or deleted, input the decoder
// refuses) are left out.
func Pairs(t testing.TB, testdata string) []Pair {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(testdata, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var pairs []Pair
	for _, dir := range dirs {
		oldCRD, okOld := readCRD(filepath.Join(dir, "old.yaml"))
		newCRD, okNew := readCRD(filepath.Join(dir, "new.yaml"))
		if okOld && okNew {
			pairs = append(pairs, Pair{Dir: dir, Old: oldCRD, New: newCRD})
		}
	}
	if len(pairs) == 0 {
		t.Fatalf("no testdata pairs in %s", testdata)
	}
	return pairs
}

// readCRD reads a file holding one CRD; ok is false for a missing file or
// anything else.
func readCRD(path string) (*apiextv1.CustomResourceDefinition, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil || crd.Kind != "CustomResourceDefinition" {
		return nil, false
	}
	return crd, true
}
