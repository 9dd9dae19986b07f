package checks

import "testing"

func TestDocumentation(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "description", old: `{type: string, description: old}`, new: `{type: string, description: new}`, want: []string{}},
		{name: "description added and removed", old: `{type: string, description: old}`, new: `{type: string}`, want: []string{}},
		{name: "title", old: `{type: string, title: Old}`, new: `{type: string, title: New}`, want: []string{}},
		{name: "example", old: `{type: string, example: a}`, new: `{type: string, example: b}`, want: []string{}},
		{name: "example added", old: `{type: object}`, new: `{type: object, example: {a: 1}}`, want: []string{}},
		{name: "externalDocs", old: `{type: string, externalDocs: {url: "https://a.example.com"}}`,
			new: `{type: string, externalDocs: {url: "https://b.example.com", description: more}}`, want: []string{}},
		{name: "all four at once on nested properties",
			old: `{type: object, description: a, properties: {b: {type: string, title: B, example: x, externalDocs: {url: "https://a.example.com"}}}}`,
			new: `{type: object, description: A, properties: {b: {type: string, title: Bee, example: z, description: "the b"}}}`, want: []string{}},
		{name: "array items", old: `{type: array, items: {type: string, description: a}}`, new: `{type: array, items: {type: string, description: b}}`, want: []string{}},
		{name: "map values", old: `{type: object, additionalProperties: {type: string, description: a}}`,
			new: `{type: object, additionalProperties: {type: string, description: b, title: B}}`, want: []string{}},
		{name: "combinator branch", old: `{type: integer, allOf: [{minimum: 1, description: a}]}`, new: `{type: integer, allOf: [{minimum: 1, description: b}]}`, want: []string{}},
		{name: "combinator branches of a changed length", old: `{type: integer, allOf: [{minimum: 1, description: a}, {maximum: 9}]}`,
			new: `{type: integer, allOf: [{minimum: 1, description: b}]}`, want: []string{}},
		{name: "inside not", old: `{type: string, not: {enum: [x], description: a}}`, new: `{type: string, not: {enum: [x], example: x}}`, want: []string{}},
		{name: "documentation edit beside a real change is not reported itself", old: `{type: string, description: a, maxLength: 10}`,
			new:  `{type: string, description: b, maxLength: 5}`,
			want: []string{"error maxLength v1 ^.spec.x: maxLength decreased: 10 -> 5"}},
	})
}
