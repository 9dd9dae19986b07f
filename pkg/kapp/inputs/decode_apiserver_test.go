package inputs_test

// The decoding compared with packages that the inputs package does not
// import: the apiserver's codec and the deploy path of the preflight check.

import (
	"encoding/json"
	"fmt"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// TestDecodeLikeTheAPIServer decodes CRD documents three ways and expects
// the tools command to agree with the other two: the apiserver's own codec
// (case-sensitive sigs.k8s.io/json, as for a request body) and the deploy
// path (kapp's resources, converted to a typed CRD by our check).
func TestDecodeLikeTheAPIServer(t *testing.T) {
	const jsonDoc = `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": {"name": "widgets.example.com"},
		"spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
		"versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": %s}}]}}`
	const yamlDoc = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n" +
		"metadata: {name: widgets.example.com}\n" +
		"spec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, kind: Widget}\n" +
		"  versions:\n  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: %s}}\n"

	cases := []struct {
		name   string
		schema string // a JSON object, also valid YAML
		want   string // the decoded openAPIV3Schema, as JSON
		// apiserverRejects: the apiserver's codec refuses the JSON as
		// written; kapp rewrites the number before sending it.
		apiserverRejects bool
		// deployRounds: kapp reads numbers as float64, rounding integers
		// beyond 2^53 before the check (and the apiserver) see them.
		deployRounds string
	}{
		{name: "case variant after the keyword", schema: `{"type": "string", "maxLength": 3, "MAXLENGTH": 5}`,
			want: `{"type":"string","maxLength":3}`},
		{name: "case variant before the keyword", schema: `{"type": "string", "MAXLENGTH": 5, "maxLength": 3}`,
			want: `{"type":"string","maxLength":3}`},
		{name: "lower-case variant (sorts after the keyword)", schema: `{"type": "string", "maxLength": 3, "maxlength": 5}`,
			want: `{"type":"string","maxLength":3}`},
		{name: "only a case variant", schema: `{"type": "string", "maxlength": 5}`,
			want: `{"type":"string"}`},
		{name: "case variant of a nested keyword", schema: `{"type": "object", "Properties": {"a": {"type": "string"}}}`,
			want: `{"type":"object"}`},
		{name: "duplicate key: the last one wins", schema: `{"type": "string", "maxLength": 3, "maxLength": 5}`,
			want: `{"type":"string","maxLength":5}`},
		{name: "integer written as a float", schema: `{"type": "string", "maxLength": 5.0}`,
			want: `{"type":"string","maxLength":5}`, apiserverRejects: true},
		{name: "integer written with an exponent", schema: `{"type": "string", "maxLength": 1e3}`,
			want: `{"type":"string","maxLength":1000}`, apiserverRejects: true},
		{name: "integer beyond float precision", schema: `{"type": "integer", "default": 9007199254740993}`,
			want:         `{"type":"integer","default":9007199254740993}`,
			deployRounds: `{"type":"integer","default":9007199254740992}`},
	}
	scheme := runtime.NewScheme()
	require.NoError(t, apiextv1.AddToScheme(scheme))
	apiserver := serializer.NewCodecFactory(scheme).UniversalDeserializer()

	for _, tc := range cases {
		for _, form := range []string{"json", "yaml"} {
			t.Run(tc.name+" in "+form, func(t *testing.T) {
				doc := fmt.Sprintf(jsonDoc, tc.schema)
				if form == "yaml" {
					doc = fmt.Sprintf(yamlDoc, tc.schema)
				}

				crds, _, err := inputs.DecodeDoc("doc", []byte(doc))
				require.NoError(t, err)
				require.Len(t, crds, 1)
				require.Equal(t, tc.want, schemaJSON(t, crds[0].CRD), "tools")

				rs, err := ctlres.NewResourcesFromBytes([]byte(doc))
				require.NoError(t, err)
				deployed, err := preflight.CRDFromResource(rs[0])
				require.NoError(t, err)
				want := tc.want
				if tc.deployRounds != "" {
					want = tc.deployRounds
				}
				require.Equal(t, want, schemaJSON(t, deployed), "deploy path")

				obj, _, err := apiserver.Decode([]byte(doc), nil, nil)
				if tc.apiserverRejects && form == "json" {
					require.Error(t, err, "apiserver")
					return
				}
				require.NoError(t, err)
				require.Equal(t, tc.want, schemaJSON(t, obj.(*apiextv1.CustomResourceDefinition)), "apiserver")
			})
		}
	}

	t.Run("case variant of kind: not a CRD", func(t *testing.T) {
		doc := `{"apiVersion": "apiextensions.k8s.io/v1", "Kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"}}`
		crds, _, err := inputs.DecodeDoc("doc", []byte(doc))
		require.NoError(t, err)
		require.Empty(t, crds)
	})
}

func schemaJSON(t *testing.T, crd *apiextv1.CustomResourceDefinition) string {
	t.Helper()
	bs, err := json.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	require.NoError(t, err)
	return string(bs)
}
