package checks

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/relang"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

func TestFormat(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "unchanged", old: `{type: string, format: date-time}`, new: `{type: string, format: date-time}`, want: []string{}},
		{name: "added", old: `{type: string}`, new: `{type: string, format: date-time}`,
			want: []string{`error format v1 ^.spec.x: format added: (none) -> "date-time"`}},
		{name: "changed", old: `{type: string, format: hostname}`, new: `{type: string, format: ipv4}`,
			want: []string{`error format v1 ^.spec.x: format changed: "hostname" -> "ipv4"`}},
		{name: "narrowed to a uuid version", old: `{type: string, format: uuid}`, new: `{type: string, format: uuid4}`,
			want: []string{`error format v1 ^.spec.x: format changed: "uuid" -> "uuid4"`}},
		{name: "widened from a uuid version", old: `{type: string, format: uuid5}`, new: `{type: string, format: uuid}`, want: []string{}},
		{name: "widened to isbn", old: `{type: string, format: isbn13}`, new: `{type: string, format: isbn}`, want: []string{}},
		{name: "narrowed to isbn10", old: `{type: string, format: isbn}`, new: `{type: string, format: isbn10}`,
			want: []string{`error format v1 ^.spec.x: format changed: "isbn" -> "isbn10"`}},
		{name: "short name to long name", old: `{type: string, format: k8s-short-name}`, new: `{type: string, format: k8s-long-name}`, want: []string{}},
		{name: "spelled without the dash", old: `{type: string, format: date-time}`, new: `{type: string, format: datetime}`, want: []string{}},
		{name: "to a format the apiserver ignores", old: `{type: string, format: email}`, new: `{type: string, format: url}`, want: []string{}},
		{name: "int32 widened to int64", old: `{type: integer, format: int32}`, new: `{type: integer, format: int64}`, want: []string{}},
		{name: "ignored format added", old: `{type: string}`, new: `{type: string, format: my-custom}`, want: []string{}},
		{name: "password accepts every string", old: `{type: string}`, new: `{type: string, format: password}`, want: []string{}},
		{name: "from an ignored format to a validated one", old: `{type: string, format: url}`, new: `{type: string, format: uri}`,
			want: []string{`error format v1 ^.spec.x: format changed: "url" -> "uri" (the old format is not validated by the apiserver)`}},
		{name: "removed relaxes", old: `{type: string, format: uuid}`, new: `{type: string}`, want: []string{}},
		{name: "format toggle off", old: `{type: string}`, new: `{type: string, format: date-time}`,
			config: func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckFormat] = false },
			want:   []string{}},
	})
}

// TestNumericFormat: the numeric formats are judged as the target
// Kubernetes version validates them: from 1.37 on, int32 on an integer and
// float on a number bound the values, and the finding says that its
// verdict depends on the version; 1.35 and 1.36 ignore them.
func TestNumericFormat(t *testing.T) {
	at := func(v string) func(*config.Settings) {
		return func(c *config.Settings) {
			kv, err := config.ParseKubeVersion(v)
			if err != nil {
				t.Fatal(err)
			}
			c.KubeVersion = kv
		}
	}
	const int32Range, float32Range = "(values beyond the int32 range -2147483648..2147483647 are rejected)", "(values beyond float32's range (±3.4028235e+38) are rejected)"
	type pair struct{ old, new string }
	cases := []struct {
		name     string
		pair     pair
		on137    []string // at 1.37 (and by default); nothing at 1.35 and 1.36
		onlyFrom string
	}{
		{name: "int32 added to an integer", pair: pair{`{type: integer}`, `{type: integer, format: int32}`},
			on137: []string{`error format v1 ^.spec.x: format added: (none) -> "int32" ` + int32Range + ` (Kubernetes 1.37 and later; judged for 1.37)`}},
		{name: "int64 narrowed to int32", pair: pair{`{type: integer, format: int64}`, `{type: integer, format: int32}`},
			on137: []string{`error format v1 ^.spec.x: format changed: "int64" -> "int32" ` + int32Range + ` (Kubernetes 1.37 and later; judged for 1.37)`}},
		{name: "float added to a number", pair: pair{`{type: number}`, `{type: number, format: float}`},
			on137: []string{`error format v1 ^.spec.x: format added: (none) -> "float" ` + float32Range + ` (Kubernetes 1.37 and later; judged for 1.37)`}},
		{name: "double narrowed to float", pair: pair{`{type: number, format: double}`, `{type: number, format: float}`},
			on137: []string{`error format v1 ^.spec.x: format changed: "double" -> "float" ` + float32Range + ` (Kubernetes 1.37 and later; judged for 1.37)`}},
		{name: "int64 added to an integer: the type's own range", pair: pair{`{type: integer}`, `{type: integer, format: int64}`}, on137: []string{}},
		{name: "double added to a number: no range", pair: pair{`{type: number}`, `{type: number, format: double}`}, on137: []string{}},
		{name: "int32 widened to int64", pair: pair{`{type: integer, format: int32}`, `{type: integer, format: int64}`}, on137: []string{}},
		{name: "float widened to double", pair: pair{`{type: number, format: float}`, `{type: number, format: double}`}, on137: []string{}},
		{name: "int32 removed", pair: pair{`{type: integer, format: int32}`, `{type: integer}`}, on137: []string{}},
		{name: "a string format on an integer is dropped", pair: pair{`{type: integer}`, `{type: integer, format: float}`}, on137: []string{}},
		{name: "int32 on an untyped value is a string format, ignored", pair: pair{`{x-kubernetes-int-or-string: true}`, `{x-kubernetes-int-or-string: true, format: int32}`}, on137: []string{}},
		{name: "int32 added inside a list", pair: pair{`{type: array, items: {type: integer}}`, `{type: array, items: {type: integer, format: int32}}`},
			on137: []string{`error format v1 ^.spec.x[*]: format added: (none) -> "int32" ` + int32Range + ` (Kubernetes 1.37 and later; judged for 1.37)`}},
	}
	for _, tc := range cases {
		for _, v := range []string{"1.35", "1.36", "1.37", "default"} {
			t.Run(tc.name+"/"+v, func(t *testing.T) {
				want := tc.on137
				if v == "1.35" || v == "1.36" {
					want = []string{}
				}
				var cfg func(*config.Settings)
				if v != "default" {
					cfg = at(v)
				}
				assertFindings(t, enginetest.CRDWithField(t, tc.pair.old), enginetest.CRDWithField(t, tc.pair.new), cfg, want)
			})
		}
	}
	t.Run("toggle off", func(t *testing.T) {
		assertFindings(t, enginetest.CRDWithField(t, `{type: integer}`), enginetest.CRDWithField(t, `{type: integer, format: int32}`),
			func(c *config.Settings) { c.Checks.SameVersion.Toggles[config.CheckFormat] = false }, []string{})
	})
	t.Run("the fact fields", func(t *testing.T) {
		fs := Compare(enginetest.CRDWithField(t, `{type: integer}`), enginetest.CRDWithField(t, `{type: integer, format: int32}`), nil)
		if len(fs) != 1 || fs[0].KubeVersionSince != "1.37" || fs[0].KubeVersion != "1.37" {
			t.Fatalf("findings %#v", fs)
		}
		fs = Compare(enginetest.CRDWithField(t, `{type: string}`), enginetest.CRDWithField(t, `{type: string, format: email}`), nil)
		if len(fs) != 1 || fs[0].KubeVersionSince != "" || fs[0].KubeVersion != "" {
			t.Fatalf("a string format's verdict depends on no version: %#v", fs)
		}
	})
}

// TestNumericFormatsAgreeWithAPIServer proves checkNumericFormat with the
// apiserver's schema validator, at both ends of the supported versions:
// for every pair of numeric formats on a type, the engine reports the
// change exactly when the new schema rejects a sample value the old one
// accepts. At 1.37 the validator is the library's own (v0.37.2: its
// kube-openapi passes the type and a numeric format to the number
// validator, which checks the value's range). At 1.35 it is the same
// validator of the schemas without their numeric formats: 1.35's
// kube-openapi (v0.0.0-20250910181357-589584f1c912, validate/schema.go
// numberValidator) passes the number validator neither type nor format,
// so the range check (IsValueValidAgainstRange) sees no format and checks
// nothing, which a schema without format and without minimum, maximum or
// multipleOf gives at 1.37 too.
func TestNumericFormatsAgreeWithAPIServer(t *testing.T) {
	samples := map[string][]any{
		"integer": {int64(0), int64(-5), int64(math.MaxInt32), int64(math.MinInt32), int64(math.MaxInt32) + 1, int64(math.MinInt32) - 1, int64(1 << 40), int64(math.MaxInt64)},
		"number":  {int64(0), 0.5, -3.25, 3.4e38, -3.4e38, 3.5e38, -1e39, 1e300, int64(1 << 40)},
	}
	formats := map[string][]string{"integer": {"", "int32", "int64"}, "number": {"", "float", "double"}}
	schema := func(typ, format string) string {
		if format == "" {
			return `{type: ` + typ + `}`
		}
		return `{type: ` + typ + `, format: ` + format + `}`
	}
	for _, ver := range []string{"1.35", "1.37"} {
		kv, err := config.ParseKubeVersion(ver)
		if err != nil {
			t.Fatal(err)
		}
		validator := func(typ, format string) validation.SchemaValidator {
			if ver == "1.35" {
				format = "" // 1.35's number validator sees no format
			}
			return enginetest.SchemaValidator(t, schema(typ, format))
		}
		for typ, fs := range formats {
			for _, of := range fs {
				for _, nf := range fs {
					if of == nf {
						continue
					}
					t.Run(ver+"/"+typ+"/"+of+"->"+nf, func(t *testing.T) {
						oldV, newV := validator(typ, of), validator(typ, nf)
						var rejected []string
						for _, v := range samples[typ] {
							if len(validation.ValidateCustomResource(nil, v, oldV)) > 0 {
								continue // not a value the old schema holds
							}
							if errs := validation.ValidateCustomResource(nil, v, newV); len(errs) > 0 {
								rejected = append(rejected, fmt.Sprintf("%v: %v", v, errs.ToAggregate()))
							}
						}
						cfg := config.Default()
						cfg.KubeVersion = kv
						findings := Compare(enginetest.CRDWithField(t, schema(typ, of)), enginetest.CRDWithField(t, schema(typ, nf)), &cfg)
						switch {
						case len(findings) == 0 && len(rejected) > 0:
							t.Errorf("no finding, but the apiserver rejects %s", strings.Join(rejected, "; "))
						case len(findings) > 0 && len(rejected) == 0:
							t.Errorf("findings %q, but the apiserver rejects no sample value", enginetest.Render(findings))
						}
					})
				}
			}
		}
	}
}

// TestValidatedFormats checks validatedFormats against the apiserver: a
// format counts as validated exactly when apiextensions supports it (at
// the newest version, 1.35) and its validator rejects a value.
func TestValidatedFormats(t *testing.T) {
	candidates := []string{"password", "int32", "int64", "float", "double", "url", "UUID", "date-time",
		"k8s-short-name", "k8s-long-name", "iso8601", "my-custom"}
	for f := range validatedFormats {
		candidates = append(candidates, f)
	}
	for _, f := range candidates {
		s := &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: f}}
		supported := len(validation.GetUnrecognizedFormats(s, version.MajorMinor(1, 35))) == 0
		v, _, err := validation.NewSchemaValidatorForVersion(&apiextensions.JSONSchemaProps{Type: "string", Format: f}, version.MajorMinor(1, 35))
		if err != nil {
			t.Fatalf("format %q: %v", f, err)
		}
		rejects := len(validation.ValidateCustomResource(nil, "%%% not valid", v)) > 0
		if got, want := validatedFormats[NormalizeFormat(f)], supported && rejects; got != want {
			t.Errorf("format %q: validatedFormats says %v, the apiserver supports it: %v, rejects a value: %v", f, got, supported, rejects)
		}
	}
}

// TestFormatSupersets proves each pair of formatSupersets with the strfmt
// validators the apiserver uses: every sampled value valid under the
// narrower format is valid under the wider one (and enough samples are
// valid to mean something). The uuid versions are also proven exactly,
// by comparing their regular languages.
func TestFormatSupersets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	samplers := map[string]func() string{
		"uuid3": patternSamples(t, r, strfmt.UUID3Pattern), "uuid4": patternSamples(t, r, strfmt.UUID4Pattern),
		"uuid5":  patternSamples(t, r, strfmt.UUID5Pattern),
		"isbn10": func() string { return isbnCandidate(r, 10) }, "isbn13": func() string { return isbnCandidate(r, 13) },
		"k8sshortname": patternSamples(t, r, `^[a-z0-9]([-a-z0-9]{0,70}[a-z0-9])?$`),
	}
	names := map[string]string{"k8sshortname": "k8s-short-name", "k8slongname": "k8s-long-name"}
	name := func(f string) string {
		if n, ok := names[f]; ok {
			return n
		}
		return f
	}
	for sub, sups := range formatSupersets {
		sample, ok := samplers[sub]
		if !ok {
			t.Fatalf("no sampler for %q", sub)
		}
		for _, sup := range sups {
			t.Run(sub+"<"+sup, func(t *testing.T) {
				valid := 0
				for range 3000 {
					s := sample()
					if !strfmt.Default.Validates(name(sub), s) {
						continue
					}
					valid++
					if !strfmt.Default.Validates(name(sup), s) {
						t.Fatalf("%q is a valid %s but not a valid %s", s, sub, sup)
					}
				}
				if valid < 100 {
					t.Fatalf("only %d of 3000 samples are valid %s values", valid, sub)
				}
			})
		}
	}
	for _, p := range []string{strfmt.UUID3Pattern, strfmt.UUID4Pattern, strfmt.UUID5Pattern} {
		sub, err1 := relang.Compile(p)
		sup, err2 := relang.Compile(strfmt.UUIDPattern)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if res := relang.Includes(sub, sup, 0); res.Verdict != relang.Included {
			t.Errorf("%s ⊆ %s: %v %q", p, strfmt.UUIDPattern, res.Verdict, res.Witness)
		}
	}
}

func patternSamples(t *testing.T, r *rand.Rand, pattern string) func() string {
	s, err := relang.NewSampler(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return func() string {
		v, _ := s.Sample(r)
		return v
	}
}

// isbnCandidate returns digits (the last one possibly X for ISBN-10) with
// random dashes and spaces; about one in ten has a valid check digit.
func isbnCandidate(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 && r.IntN(5) == 0 {
			b.WriteString([]string{"-", " "}[r.IntN(2)])
		}
		if i == n-1 && n == 10 && r.IntN(11) == 0 {
			b.WriteByte('X')
			continue
		}
		fmt.Fprintf(&b, "%d", r.IntN(10))
	}
	return b.String()
}

// TestFormatRelaxedToUnrecognizedAgreesWithAPIServer proves with the
// apiserver's schema validator (at Kubernetes 1.35 and at the library's
// own version) that changing a validated format to one the apiserver does
// not recognize (or to none, or to password) relaxes: every value valid
// under the old format stays valid under the new one, which accepts even a
// value the old one rejects. The engine reports no such change, and
// reports the reverse change, which rejects that value.
func TestFormatRelaxedToUnrecognizedAgreesWithAPIServer(t *testing.T) {
	const invalid = "%%% not valid"
	valid := map[string]string{
		"bsonobjectid": "507f1f77bcf86cd799439011", "uri": "https://example.com/a", "email": "a@example.com",
		"hostname": "example.com", "ipv4": "10.0.0.1", "ipv6": "::1", "cidr": "10.0.0.0/8", "mac": "00:1a:2b:3c:4d:5e",
		"uuid": "a8098c1a-f86e-11da-bd1a-00112444be1e", "uuid3": "a3bb189e-8bf9-3888-9912-ace4e6543002",
		"uuid4": "9c858901-8a57-4791-81fe-4c455b099bc9", "uuid5": "a6edc906-2f9f-5fb2-a373-efac406f0ef2",
		"isbn": "0321751043", "isbn10": "0321751043", "isbn13": "978-0321751041", "creditcard": "4111111111111111",
		"ssn": "111-11-1111", "hexcolor": "#ffffff", "rgbcolor": "rgb(255,255,255)", "byte": "aGVsbG8=",
		"date": "2006-01-02", "duration": "22s", "datetime": "2014-12-15T19:30:20.000Z",
		"k8sshortname": "my-name", "k8slongname": "my.name",
	}
	names := map[string]string{"k8sshortname": "k8s-short-name", "k8slongname": "k8s-long-name", "datetime": "date-time"}
	unrecognized := []string{"", "url", "my-format", "int32", "float", "iso8601", "password"}
	versions := map[string]*version.Version{"1.35": version.MajorMinor(1, 35), "library": nil}
	for f := range validatedFormats {
		name := f
		if n, ok := names[f]; ok {
			name = n
		}
		for _, g := range unrecognized {
			t.Run(name+"->"+g, func(t *testing.T) {
				for vname, ver := range versions {
					oldV, newV := stringFormatValidator(t, name, ver), stringFormatValidator(t, g, ver)
					if errs := validation.ValidateCustomResource(nil, valid[f], oldV); len(errs) > 0 {
						t.Fatalf("%s: %q is not a valid %s: %v", vname, valid[f], name, errs)
					}
					if len(validation.ValidateCustomResource(nil, invalid, oldV)) == 0 {
						t.Fatalf("%s: the apiserver does not validate %s", vname, name)
					}
					for _, v := range []string{valid[f], invalid} {
						if errs := validation.ValidateCustomResource(nil, v, newV); len(errs) > 0 {
							t.Errorf("%s: format %q rejects %q: %v", vname, g, v, errs)
						}
					}
				}
				same := func(f string) string {
					if f == "" {
						return `{type: string}`
					}
					return `{type: string, format: "` + f + `"}`
				}
				if got := enginetest.Render(Compare(enginetest.CRDWithField(t, same(name)), enginetest.CRDWithField(t, same(g)), enginetest.Ptr(config.Default()))); len(got) > 0 {
					t.Errorf("%s -> %q relaxes, but the engine reports %q", name, g, got)
				}
				if g == "" || g == "password" {
					return // no format added, or one that accepts every string
				}
				if got := enginetest.Render(Compare(enginetest.CRDWithField(t, same(g)), enginetest.CRDWithField(t, same(name)), enginetest.Ptr(config.Default()))); len(got) != 1 {
					t.Errorf("%q -> %s tightens, but the engine reports %q", g, name, got)
				}
			})
		}
	}
}

// stringFormatValidator is the apiserver's schema validator of
// {type: string, format: f} at Kubernetes version v (nil: the library's
// default compatibility version, as the apiserver builds it).
func stringFormatValidator(t *testing.T, f string, v *version.Version) validation.SchemaValidator {
	t.Helper()
	s := &apiextensions.JSONSchemaProps{Type: "string", Format: f}
	var (
		val validation.SchemaValidator
		err error
	)
	if v == nil {
		val, _, err = validation.NewSchemaValidator(s)
	} else {
		val, _, err = validation.NewSchemaValidatorForVersion(s, v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return val
}
