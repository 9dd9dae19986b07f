package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// specCase is a schemaCase over the whole .spec schema of version v1 of
// widgets.example.com, for changes that span several properties.
type specCase struct {
	name     string
	old, new string
	config   func(*config.Settings)
	want     []string
}

func runSpecCases(t *testing.T, cases []specCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertFindings(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: tc.old}), enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: tc.new}), tc.config, tc.want)
		})
	}
}

func TestWalkFieldRemoval(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "top-level field removed",
			old:  `{type: object, properties: {a: {type: string}, b: {type: integer}}}`,
			new:  `{type: object, properties: {a: {type: string}}}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.b: data loss: existing field removed (was integer)"}},
		{name: "nested field removed",
			old:  `{type: object, properties: {a: {type: object, properties: {b: {type: object, properties: {c: {type: boolean}, d: {type: string}}}}}}}`,
			new:  `{type: object, properties: {a: {type: object, properties: {b: {type: object, properties: {d: {type: string}}}}}}}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.a.b.c: data loss: existing field removed (was boolean)"}},
		{name: "object field with children removed is one finding",
			old:  `{type: object, properties: {a: {type: object, properties: {b: {type: string}, c: {type: string}}}}}`,
			new:  `{type: object}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.a: data loss: existing field removed (was object)"}},
		{name: "several fields removed, sorted",
			old: `{type: object, properties: {z: {type: string}, a: {type: string}, m: {x-kubernetes-int-or-string: true}}}`,
			new: `{type: object}`,
			want: []string{
				"error existingFieldRemoval v1 ^.spec.a: data loss: existing field removed (was string)",
				"error existingFieldRemoval v1 ^.spec.m: data loss: existing field removed (was int-or-string)",
				"error existingFieldRemoval v1 ^.spec.z: data loss: existing field removed (was string)",
			}},
		{name: "field removed under array items",
			old:  `{type: object, properties: {x: {type: array, items: {type: object, properties: {w: {type: string}, z: {type: string}}}}}}`,
			new:  `{type: object, properties: {x: {type: array, items: {type: object, properties: {z: {type: string}}}}}}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.x[*].w: data loss: existing field removed (was string)"}},
		{name: "field removed under nested arrays",
			old:  `{type: object, properties: {x: {type: array, items: {type: array, items: {type: object, properties: {w: {type: number}}}}}}}`,
			new:  `{type: object, properties: {x: {type: array, items: {type: array, items: {type: object}}}}}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.x[*][*].w: data loss: existing field removed (was number)"}},
		{name: "field removed under map values",
			old:  `{type: object, properties: {x: {type: object, additionalProperties: {type: object, properties: {w: {type: string}, z: {type: string}}}}}}`,
			new:  `{type: object, properties: {x: {type: object, additionalProperties: {type: object, properties: {z: {type: string}}}}}}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.x{*}.w: data loss: existing field removed (was string)"}},
		{name: "field removed under items of map values",
			old:  `{type: object, properties: {x: {type: object, additionalProperties: {type: array, items: {type: object, properties: {w: {type: string}}}}}}}`,
			new:  `{type: object, properties: {x: {type: object, additionalProperties: {type: array, items: {type: object}}}}}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.x{*}[*].w: data loss: existing field removed (was string)"}},
		{name: "removal does not hide other findings in the same version",
			old: `{type: object, required: [a], properties: {a: {type: string}, b: {type: string},
				c: {type: object, properties: {d: {type: string}, e: {type: integer, maximum: 10}}}}}`,
			new: `{type: object, required: [a, b], properties: {a: {type: integer}, b: {type: string},
				c: {type: object, properties: {e: {type: integer, maximum: 5}}}}}`,
			want: []string{
				"error existingFieldRemoval v1 ^.spec.c.d: data loss: existing field removed (was string)",
				"error required v1 ^.spec: new required fields: [\"b\"]",
				"error type v1 ^.spec.a: type changed: \"string\" -> \"integer\"",
				"error maximum v1 ^.spec.c.e: maximum decreased: 10 -> 5",
			}},
		{name: "existingFieldRemoval disabled",
			old:    `{type: object, properties: {a: {type: string}, b: {type: object, properties: {c: {type: string}}}}}`,
			new:    `{type: object, properties: {b: {type: object}}}`,
			config: func(c *config.Settings) { c.Checks.CRD.ExistingFieldRemoval.Enabled = false },
			want:   []string{}},
		{name: "existingFieldRemoval disabled leaves other checks on",
			old:    `{type: object, properties: {a: {type: string}, b: {type: string}}}`,
			new:    `{type: object, properties: {b: {type: integer}}}`,
			config: func(c *config.Settings) { c.Checks.CRD.ExistingFieldRemoval.Enabled = false },
			want:   []string{"error type v1 ^.spec.b: type changed: \"string\" -> \"integer\""}},
	})
}

func TestWalkNeverFindings(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "new optional field",
			old:  `{type: object, properties: {a: {type: string}}}`,
			new:  `{type: object, properties: {a: {type: string}, b: {type: string, enum: [x], minLength: 1, pattern: "^x$"}}}`,
			want: []string{}},
		{name: "new optional nested field under items and map values",
			old:  `{type: object, properties: {l: {type: array, items: {type: object}}, m: {type: object, additionalProperties: {type: object}}}}`,
			new:  `{type: object, properties: {l: {type: array, items: {type: object, properties: {n: {type: string}}}}, m: {type: object, additionalProperties: {type: object, properties: {n: {type: string}}}}}}`,
			want: []string{}},
		{name: "new optional parent with required children",
			old:  `{type: object, properties: {a: {type: string}}}`,
			new:  `{type: object, properties: {a: {type: string}, p: {type: object, required: [q], properties: {q: {type: string}, r: {type: object, required: [s], properties: {s: {type: integer}}}}}}}`,
			want: []string{}},
		{name: "new optional list of objects with required keys",
			old:  `{type: object}`,
			new:  `{type: object, properties: {l: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [name], items: {type: object, required: [name], properties: {name: {type: string}}}}}}`,
			want: []string{}},
		{name: "reordered properties, required list and enum values",
			old:  `{type: object, required: [a, b, c], properties: {a: {type: string, enum: [p, q, r]}, b: {type: string}, c: {type: string}}}`,
			new:  `{type: object, properties: {c: {type: string}, b: {type: string}, a: {enum: [r, p, q], type: string}}, required: [c, a, b]}`,
			want: []string{}},
		{name: "required field made optional",
			old:  `{type: object, required: [a, b], properties: {a: {type: string}, b: {type: string}}}`,
			new:  `{type: object, required: [b], properties: {a: {type: string}, b: {type: string}}}`,
			want: []string{}},
		{name: "all required fields made optional",
			old:  `{type: object, required: [a], properties: {a: {type: string}}}`,
			new:  `{type: object, properties: {a: {type: string}}}`,
			want: []string{}},
	})
}

func TestWalkAdditionalProperties(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "value schema unchanged", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: {type: string}}`,
			want: []string{}},
		{name: "value schema removed", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object}`,
			want: []string{"error additionalProperties v1 ^.spec.x: data loss: map value schema removed: existing map entries would be pruned"}},
		{name: "value schema replaced by false", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: false}`,
			want: []string{"error additionalProperties v1 ^.spec.x: data loss: map value schema removed: existing map entries would be pruned"}},
		{name: "true restricted to a value schema", old: `{type: object, additionalProperties: true}`, new: `{type: object, additionalProperties: {type: integer}}`,
			want: []string{"error additionalProperties v1 ^.spec.x: map values restricted: additionalProperties true -> a value schema of integer"}},
		{name: "true removed", old: `{type: object, additionalProperties: true}`, new: `{type: object}`,
			want: []string{"error additionalProperties v1 ^.spec.x: data loss: additionalProperties true removed: existing map entries would be pruned"}},
		{name: "value schema added relaxes", old: `{type: object}`, new: `{type: object, additionalProperties: {type: string}}`,
			want: []string{}},
		{name: "value schema loosened to true relaxes", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: true}`,
			want: []string{}},
		{name: "false loosened relaxes", old: `{type: object, additionalProperties: false}`, new: `{type: object, additionalProperties: {type: string}}`,
			want: []string{}},
		{name: "value schema tightened is reported at {*}", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: {type: string, maxLength: 5}}`,
			want: []string{"error maxLength v1 ^.spec.x{*}: maxLength added: (none) -> 5"}},
		{name: "value type changed is reported at {*}", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: {type: integer}}`,
			want: []string{"error type v1 ^.spec.x{*}: type changed: \"string\" -> \"integer\""}},
		{name: "additionalProperties toggle off", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Toggles[config.CheckAdditionalProperties] = false
			},
			want: []string{}},
		{name: "additionalProperties toggle off keeps walking value schemas", old: `{type: object, additionalProperties: {type: string}}`, new: `{type: object, additionalProperties: {type: string, minLength: 1}}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Toggles[config.CheckAdditionalProperties] = false
			},
			want: []string{"error minLength v1 ^.spec.x{*}: minLength added: (none) -> 1"}},
	})
}

func TestWalkVersionSchemas(t *testing.T) {
	noSchema := func(c *apiextv1.CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil }
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string}}}`}
	runCRDCases(t, []crdCase{
		{name: "version schema removed", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1), noSchema),
			want: []string{"error existingFieldRemoval v1 ^: data loss: schema removed"}},
		{name: "version schema removed, existingFieldRemoval disabled", old: enginetest.NewCRD(t, v1), new: enginetest.With(enginetest.NewCRD(t, v1), noSchema),
			config: func(c *config.Settings) { c.Checks.CRD.ExistingFieldRemoval.Enabled = false },
			want:   []string{}},
		{name: "version schema added", old: enginetest.With(enginetest.NewCRD(t, v1), noSchema), new: enginetest.NewCRD(t, v1),
			want: []string{}},
		{name: "root description edited", old: enginetest.NewCRD(t, v1),
			new: enginetest.With(enginetest.NewCRD(t, v1), func(c *apiextv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "Widget is a widget."
			}),
			want: []string{}},
		{name: "every version is compared",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: `{type: object, properties: {a: {type: string}}}`}, enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string}}}`}),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: false, Spec: `{type: object, properties: {a: {type: string, maxLength: 3}}}`}, enginetest.TestVersion{Name: "v2", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string, maxLength: 3}}}`}),
			want: []string{
				"error maxLength v1 ^.spec.a: maxLength added: (none) -> 3",
				"error maxLength v2 ^.spec.a: maxLength added: (none) -> 3",
			}},
		{name: "sameVersion disabled",
			old:    enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: string}}}`}),
			new:    enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: `{type: object, properties: {a: {type: integer}}}`}),
			config: func(c *config.Settings) { c.Checks.SameVersion.Enabled = false },
			want:   []string{}},
	})
}

// existingFieldRemoval is a CRD-level check (checks.crd.existingFieldRemoval,
// crd-diff's "Global validations"): switching the
// sameVersion property checks off should not switch it off.
func TestWalkFieldRemovalWithSameVersionDisabled(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "field removed",
			old:    `{type: object, properties: {a: {type: string}, b: {type: string}}}`,
			new:    `{type: object, properties: {b: {type: integer}}}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Enabled = false },
			want:   []string{"error existingFieldRemoval v1 ^.spec.a: data loss: existing field removed (was string)"}},
		{name: "field removed, both disabled",
			old: `{type: object, properties: {a: {type: string}, b: {type: string}}}`,
			new: `{type: object, properties: {b: {type: integer}}}`,
			config: func(c *config.Settings) {
				c.Checks.SameVersion.Enabled = false
				c.Checks.CRD.ExistingFieldRemoval.Enabled = false
			},
			want: []string{}},
	})
}

func TestWalkAdditionalPropertiesToPreserveUnknownFields(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "value schema replaced by preserve-unknown-fields relaxes",
			old: `{type: object, additionalProperties: {type: string}}`,
			new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, want: []string{}},
		{name: "additionalProperties true replaced by preserve-unknown-fields relaxes",
			old: `{type: object, additionalProperties: true}`,
			new: `{type: object, x-kubernetes-preserve-unknown-fields: true}`, want: []string{}},
		{name: "value schema removed without preserve-unknown-fields prunes",
			old:  `{type: object, additionalProperties: {type: string}}`,
			new:  `{type: object}`,
			want: []string{"error additionalProperties v1 ^.spec.x: data loss: map value schema removed: existing map entries would be pruned"}},
		{name: "typed properties held to the old value schema",
			old: `{type: object, additionalProperties: {type: string}}`,
			new: `{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: integer}, b: {type: string, maxLength: 3}, c: {type: string}}}`,
			want: []string{
				`error type v1 ^.spec.x.a: type changed: "string" -> "integer" (` + mapNote + `)`,
				`error maxLength v1 ^.spec.x.b: maxLength added: (none) -> 3 (` + mapNote + `)`,
			}},
		{name: "map turned into an object: entries under other names pruned, declared ones compared",
			old: `{type: object, additionalProperties: {type: string}}`,
			new: `{type: object, properties: {a: {type: integer}}}`,
			want: []string{
				"error additionalProperties v1 ^.spec.x: data loss: map value schema removed: existing map entries would be pruned",
				`error type v1 ^.spec.x.a: type changed: "string" -> "integer" (` + mapNote + `)`,
			}},
	})
}

const (
	mapNote       = "declared where stored objects may already hold data: map entries under this name were held to the additionalProperties schema"
	preserveNote  = "declared where stored objects may already hold data: x-kubernetes-preserve-unknown-fields keeps unknown fields of any value"
	crdKeepNote   = "declared where stored objects may already hold data: spec.preserveUnknownFields: true keeps unknown fields of any value"
	nameNote      = "declared where stored objects may already hold data: metadata.name is kept whatever the schema says"
	stillKeptNote = "no longer declared, still kept: x-kubernetes-preserve-unknown-fields keeps unknown fields of any value"
)

// TestWalkImpliedData: a property one side does not declare is compared
// with what that side implies where stored objects may hold data under its
// name; elsewhere a new optional field is safe.
func TestWalkImpliedData(t *testing.T) {
	const open = `{type: object, x-kubernetes-preserve-unknown-fields: true`
	runSchemaCases(t, []schemaCase{
		{name: "new field where unknown fields were kept", old: open + `}`, new: open + `, properties: {a: {type: integer}}}`,
			want: []string{`error type v1 ^.spec.x.a: type changed: (none) -> "integer" (` + preserveNote + `)`}},
		{name: "new object field where unknown fields were kept: pruned below it",
			old: open + `}`, new: open + `, properties: {a: {type: object, properties: {b: {type: string}}}}}`,
			want: []string{
				`error preserveUnknownFields v1 ^.spec.x.a: data loss: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned (` + preserveNote + `)`,
				`error type v1 ^.spec.x.a: type changed: (none) -> "object" (` + preserveNote + `)`,
				`error type v1 ^.spec.x.a.b: type changed: (none) -> "string" (` + preserveNote + `)`,
			}},
		{name: "new field accepting anything where unknown fields were kept", old: open + `}`,
			new: open + `, properties: {a: {x-kubernetes-preserve-unknown-fields: true, nullable: true, description: any}}}`, want: []string{}},
		{name: "new field accepting anything but null where unknown fields were kept: stored nulls are dropped", old: open + `}`,
			new:  open + `, properties: {a: {x-kubernetes-preserve-unknown-fields: true}}}`,
			want: []string{`error nullable v1 ^.spec.x.a: nullable removed: null values are no longer allowed (declared where stored objects may already hold data: x-kubernetes-preserve-unknown-fields keeps unknown fields of any value)`}},
		{name: "new list where unknown fields were kept: items compared with anything", old: open + `}`,
			new: open + `, properties: {a: {type: array, items: {type: string}}}}`,
			want: []string{
				`error type v1 ^.spec.x.a: type changed: (none) -> "array" (` + preserveNote + `)`,
				`error type v1 ^.spec.x.a[*]: type changed: (none) -> "string" (` + preserveNote + `)`,
			}},
		{name: "new map where unknown fields were kept: values compared with anything", old: open + `}`,
			new: open + `, properties: {a: {type: object, additionalProperties: {type: string}}}}`,
			want: []string{
				`error preserveUnknownFields v1 ^.spec.x.a: data loss: x-kubernetes-preserve-unknown-fields: true removed: unknown fields of existing objects would be pruned (` + preserveNote + `)`,
				`error type v1 ^.spec.x.a: type changed: (none) -> "object" (` + preserveNote + `)`,
				`error type v1 ^.spec.x.a{*}: type changed: (none) -> "string" (` + preserveNote + `)`,
			}},
		{name: "map value schema added where unknown fields were kept", old: open + `}`,
			new:  open + `, additionalProperties: {type: integer}}`,
			want: []string{`error type v1 ^.spec.x{*}: type changed: (none) -> "integer" (entries that were kept as unknown fields are held to the value schema now)`}},
		{name: "map turned into an object that keeps unknown fields: its values are no longer validated", old: `{type: object, additionalProperties: {type: string, maxLength: 3}}`,
			new: open + `}`, want: []string{}},
		{name: "map turned into an object that keeps unknown fields: the defaults of its values go",
			old:  `{type: object, additionalProperties: {type: array, items: {type: object, properties: {key: {type: string, default: a}}}}}`,
			new:  open + `}`,
			want: []string{`error default v1 ^.spec.x{*}[*].key: default removed: "a" -> (none) (map entries are kept as unknown fields now)`}},
		{name: "list turned into anything: the defaults of its items go",
			old:  `{type: array, items: {type: object, properties: {key: {type: string, default: a}}}}`,
			new:  `{x-kubernetes-preserve-unknown-fields: true}`,
			want: []string{`error default v1 ^.spec.x[*].key: default removed: "a" -> (none) (` + stillKeptNote + `)`}},
		{name: "new field where map entries were kept", old: `{type: object, additionalProperties: true}`, new: `{type: object, properties: {a: {type: string}}}`,
			want: []string{
				"error additionalProperties v1 ^.spec.x: data loss: additionalProperties true removed: existing map entries would be pruned",
				`error type v1 ^.spec.x.a: type changed: (none) -> "string" (declared where stored objects may already hold data: additionalProperties: true keeps entries of any value)`,
			}},
		{name: "new field where nothing was kept", old: `{type: object, properties: {k: {type: string}}}`,
			new: `{type: object, properties: {k: {type: string}, a: {type: integer, minimum: 3}}}`, want: []string{}},
		{name: "field removed where unknown fields are kept: kept, not pruned",
			old: open + `, properties: {a: {type: object, properties: {b: {type: string}}}}}`, new: open + `}`, want: []string{}},
		{name: "field with a default removed where unknown fields are kept: the default goes",
			old: open + `, properties: {a: {type: string, default: z}}}`, new: open + `}`,
			want: []string{`error default v1 ^.spec.x.a: default removed: "z" -> (none) (` + stillKeptNote + `)`}},
		{name: "field removed where nothing is kept", old: `{type: object, properties: {a: {type: string}}}`, new: `{type: object}`,
			want: []string{"error existingFieldRemoval v1 ^.spec.x.a: data loss: existing field removed (was string)"}},
		{name: "inside combinator branches properties are constraints, not data",
			old: open + `, allOf: [{properties: {}}]}`, new: open + `, allOf: [{properties: {a: {maxLength: 3}}}]}`,
			want: []string{`error allOf v1 ^.spec.x.allOf[0]: allOf branch constrains more properties: ["a"]`}},
	})
}

// TestWalkResourceFields: apiVersion, kind and metadata are on every
// object, whatever the root schema declares.
func TestWalkResourceFields(t *testing.T) {
	root := func(props string) *apiextv1.CustomResourceDefinition {
		return enginetest.OracleCRD(t, `{type: object, properties: {`+props+`}}`, false)
	}
	runCRDCases(t, []crdCase{
		{name: "maxLength added on metadata.name", old: root(`metadata: {type: object}`),
			new:  root(`metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}`),
			want: []string{`error maxLength v1 ^.metadata.name: maxLength added: (none) -> 5 (` + nameNote + `)`}},
		{name: "metadata declared for the first time with a constraint", old: root(`spec: {type: object}`),
			new:  root(`metadata: {type: object, properties: {generateName: {type: string, maxLength: 5}}}, spec: {type: object}`),
			want: []string{`error maxLength v1 ^.metadata.generateName: maxLength added: (none) -> 5 (declared where stored objects may already hold data: every object has metadata)`}},
		{name: "metadata declared for the first time", old: root(`spec: {type: object}`), new: root(`metadata: {type: object}, spec: {type: object}`),
			want: []string{}},
		{name: "metadata.name declared without a constraint", old: root(`metadata: {type: object}`),
			new: root(`metadata: {type: object, properties: {name: {type: string}}}`), want: []string{}},
		{name: "metadata.name constraint removed with its declaration", old: root(`metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}`),
			new: root(`metadata: {type: object}`), want: []string{}},
		{name: "metadata declaration removed", old: root(`metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}`),
			new: root(`spec: {type: object}`), want: []string{}},
		{name: "apiVersion and kind declared and undeclared", old: root(`apiVersion: {type: string}`), new: root(`kind: {type: string}`),
			want: []string{}},
		{name: "apiVersion constrained", old: root(`spec: {type: object}`), new: root(`apiVersion: {type: string, pattern: "^example"}, spec: {type: object}`),
			want: []string{`error pattern v1 ^.apiVersion: pattern added: (none) -> "^example": "" no longer accepted (declared where stored objects may already hold data: every object has apiVersion and kind)`}},
		{name: "a field named metadata below the root is an ordinary field", old: enginetest.OracleCRD(t, enginetest.SpecX(`{type: object}`), false),
			new: enginetest.OracleCRD(t, enginetest.SpecX(`{type: object, properties: {metadata: {type: object, properties: {name: {type: string, maxLength: 5}}}}}`), false), want: []string{}},
	})
}

// TestWalkCRDPreserveUnknownFields: under spec.preserveUnknownFields: true
// nothing is pruned, so every new property is judged like existing data.
func TestWalkCRDPreserveUnknownFields(t *testing.T) {
	spec := func(props string, keepAll bool) *apiextv1.CustomResourceDefinition {
		return enginetest.OracleCRD(t, `{type: object, properties: {spec: {type: object, properties: {`+props+`}}}}`, keepAll)
	}
	runCRDCases(t, []crdCase{
		{name: "new field", old: spec(`a: {type: string}`, true), new: spec(`a: {type: string}, b: {type: integer}`, true),
			want: []string{`error type v1 ^.spec.b: type changed: (none) -> "integer" (` + crdKeepNote + `)`}},
		{name: "new field, nested", old: spec(`a: {type: object}`, true), new: spec(`a: {type: object, properties: {c: {type: boolean}}}`, true),
			want: []string{`error type v1 ^.spec.a.c: type changed: (none) -> "boolean" (` + crdKeepNote + `)`}},
		{name: "field removed: kept, not pruned", old: spec(`a: {type: string}, b: {type: integer}`, true), new: spec(`a: {type: string}`, true),
			want: []string{}},
		{name: "new field, the old CRD pruned", old: spec(`a: {type: string}`, false), new: spec(`a: {type: string}, b: {type: integer}`, true),
			want: []string{}},
	})
}
