// Package testcrd holds the Widget CRD that unit tests of the evaluation
// service and of the kapp preflight hook compare in a few releases.
package testcrd

import (
	"fmt"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// WidgetCRD is a Widget CRD whose spec.color enum and spec.size minimum vary.
func WidgetCRD(enum string, minimum int) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: %d}
              color: {type: string, enum: [%s]}
status:
  storedVersions: [v1]
`, minimum, enum)
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
