// Package testcrd holds the Widget CRD that unit tests of the evaluation
// service and of the kapp preflight hook compare in a few releases.
package testcrd

import (
	"fmt"
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
