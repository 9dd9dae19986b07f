package config_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// decodeYAML decodes a YAML config map the way kapp does (sigs.k8s.io/yaml:
// numbers become float64) and runs Decode on it.
func decodeYAML(t *testing.T, in string) (config.Settings, error) {
	t.Helper()
	var raw map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(in), &raw), "test input is not YAML")
	return config.Decode(raw)
}

func TestDecodeDefaults(t *testing.T) {
	cases := map[string]map[string]any{
		"nil":   nil,
		"empty": {},
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := config.Decode(raw)
			require.NoError(t, err)
			assert.Equal(t, config.Default(), got)
		})
	}
	yamlCases := map[string]string{
		"empty document": ``,
		"empty map":      `{}`,
		"nulls mean not given": `
mode: ~
failMode: null
maxFindingsPerCRD:
liveChecksTimeout:
checks:
exemptions:
`,
		"empty nested maps": `
checks:
  crd: {}
  sameVersion: {enum: {}, pattern: {enabled: null}}
  servedVersion: {}
  versions: {}
exemptions: []
`,
		"defaults spelled out": `
mode: error
failMode: closed
maxFindingsPerCRD: 50
checks:
  sameVersion:
    enabled: true
    enum: {enabled: true, additionEnforcement: IfPreviouslyConstrained, removalEnforcement: Strict}
  servedVersion:
    ignoreConversion: true
`,
	}
	for name, in := range yamlCases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeYAML(t, in)
			require.NoError(t, err)
			assert.Equal(t, config.Default(), got)
		})
	}
}

// TestDefaultPolicy checks Default() against the default policy of
// docs/checks.md.
func TestDefaultPolicy(t *testing.T) {
	d := config.Default()
	assert.Equal(t, config.ModeError, d.Mode)
	assert.Equal(t, config.FailModeClosed, d.FailMode)
	assert.Equal(t, 50, d.MaxFindingsPerCRD)
	assert.Empty(t, d.Waivers)
	assert.True(t, d.Checks.ServedVersion.IgnoreConversion, "servedVersion.ignoreConversion")
	assert.Equal(t, config.EnforcementIfPreviouslyConstrained, d.Checks.SameVersion.Enum.AdditionEnforcement)
	assert.Equal(t, config.EnforcementIfPreviouslyConstrained, d.Checks.ServedVersion.Enum.AdditionEnforcement)
	for _, v := range []config.VersionChecks{d.Checks.SameVersion, d.Checks.ServedVersion.VersionChecks} {
		assert.Empty(t, v.UnhandledFailureMode, "unhandledFailureMode inherits failMode")
		for _, id := range config.PropertyCheckIDs {
			assert.True(t, v.ToggleEnabled(id), id)
		}
	}

	// Every Enabled/Enforcement field anywhere in the config: every check is
	// on, and every enforcement Strict except enum additions and the
	// changes that invalidate no stored object are warnings.
	var enabled, enforcements int
	walkFields(reflect.ValueOf(d), "", func(path string, f reflect.Value) {
		switch {
		case f.Kind() == reflect.Bool && strings.HasSuffix(path, ".Enabled"):
			enabled++
			assert.True(t, f.Bool(), path)
		case f.Type() == reflect.TypeOf(config.Enforcement("")):
			enforcements++
			want := config.EnforcementStrict
			switch {
			case strings.HasSuffix(path, ".Enum.AdditionEnforcement"):
				want = config.EnforcementIfPreviouslyConstrained
			case strings.HasSuffix(path, ".MapType.ChangeEnforcement"),
				strings.HasSuffix(path, ".ListType.CoarseningEnforcement"),
				strings.HasSuffix(path, ".ServedVersionRemoval.UnservedEnforcement"),
				strings.HasSuffix(path, ".StoragePruning.ReadModifyWriteEnforcement"),
				strings.HasSuffix(path, ".ManagedFields.UnservedEnforcement"),
				strings.HasSuffix(path, ".ConversionWebhook.AnnotationEnforcement"),
				strings.HasSuffix(path, ".VersionLifecycle.NotDeprecatedEnforcement"):
				want = config.EnforcementWarn
			}
			assert.Equal(t, want, config.Enforcement(f.String()), path)
		}
	})
	// 15 CRD checks + 2 x (pair switch + 14 property checks with options).
	assert.Equal(t, 15+2*(1+14), enabled)
	// unaffectedEnforcement + alphaVersionEnforcement +
	// servedVersionRemoval.unservedEnforcement + 2 x
	// (enum 2, default 3, required 1, type 1, 8 bounds x 2, listType 2,
	// mapType 1).
	// storagePruning.readModifyWriteEnforcement, managedFields.unservedEnforcement,
	// versionLifecycle.notDeprecatedEnforcement, conversionWebhook.annotationEnforcement.
	assert.Equal(t, 1+1+1+1+1+1+1+2*(2+3+1+1+8*2+2+1), enforcements)

	// Default returns fresh maps: changing one result leaves the next alone.
	d.Checks.SameVersion.Toggles[config.CheckPattern] = false
	d.Checks.ServedVersion.Toggles[config.CheckFormat] = false
	assert.Equal(t, config.Default(), config.Default())
	assert.True(t, config.Default().Checks.SameVersion.ToggleEnabled(config.CheckPattern))
	assert.Empty(t, config.Default().Checks.ServedVersion.Toggles)
}

func TestAllCheckIDs(t *testing.T) {
	ids := config.AllCheckIDs()
	assert.True(t, sort.StringsAreSorted(ids))
	assert.Len(t, ids, len(config.CRDCheckIDs)+len(config.PropertyCheckIDs)+3)
	seen := map[string]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
	}
	assert.True(t, seen[config.CheckServedVersion])
	assert.True(t, seen[config.CheckUnhandled])
	assert.True(t, sort.StringsAreSorted(config.CRDCheckIDs), "CRDCheckIDs sorted")
	assert.True(t, sort.StringsAreSorted(config.PropertyCheckIDs), "PropertyCheckIDs sorted")
}

func TestDecode(t *testing.T) {
	type cfg = config.Settings
	cases := []struct {
		name string
		in   string
		want func(c *cfg)
	}{
		{"mode warn", `mode: warn`, func(c *cfg) { c.Mode = config.ModeWarn }},
		{"mode case-insensitive", `mode: WARN`, func(c *cfg) { c.Mode = config.ModeWarn }},
		{"mode error", `mode: Error`, func(c *cfg) { c.Mode = config.ModeError }},
		{"failMode open", `failMode: open`, func(c *cfg) { c.FailMode = config.FailModeOpen }},
		{"failMode case-insensitive", `failMode: Open`, func(c *cfg) { c.FailMode = config.FailModeOpen }},
		{"failMode closed", `failMode: CLOSED`, func(c *cfg) { c.FailMode = config.FailModeClosed }},
		{"maxFindingsPerCRD", `maxFindingsPerCRD: 7`, func(c *cfg) { c.MaxFindingsPerCRD = 7 }},
		{"maxFindingsPerCRD zero is unbounded", `maxFindingsPerCRD: 0`, func(c *cfg) { c.MaxFindingsPerCRD = 0 }},
		{"maxFindingsPerCRD integral float", `maxFindingsPerCRD: 12.0`, func(c *cfg) { c.MaxFindingsPerCRD = 12 }},
		{"maxFindingsPerCRD large", `maxFindingsPerCRD: 1000000`, func(c *cfg) { c.MaxFindingsPerCRD = 1000000 }},
		{"liveChecksTimeout", `liveChecksTimeout: 90s`, func(c *cfg) { c.LiveChecksTimeout = 90 * time.Second }},
		{"unaffectedEnforcement", `unaffectedEnforcement: Warn`, func(c *cfg) { c.UnaffectedEnforcement = config.EnforcementWarn }},
		{"alphaVersionEnforcement", `alphaVersionEnforcement: Warn`, func(c *cfg) { c.AlphaVersionEnforcement = config.EnforcementWarn }},
		{"webhook revealStoredValues", `webhook: {revealStoredValues: true}`, func(c *cfg) { c.Webhook.RevealStoredValues = true }},
		{"webhook empty", `webhook: {}`, func(c *cfg) {}},
		{"webhook conversion budget", `webhook: {conversion: {maxObjects: 20, timeout: 1s}}`, func(c *cfg) {
			c.Webhook.Conversion = config.ConversionBudget{MaxObjects: 20, Timeout: time.Second}
		}},
		{"alphaVersionEnforcement in any case", `alphaVersionEnforcement: warn`, func(c *cfg) { c.AlphaVersionEnforcement = config.EnforcementWarn }},
		{"versionLifecycle Strict", `checks: {crd: {versionLifecycle: {notDeprecatedEnforcement: Strict}}}`, func(c *cfg) {
			c.Checks.CRD.VersionLifecycle.NotDeprecatedEnforcement = config.EnforcementStrict
		}},
		{"versionLifecycle off", `checks: {crd: {versionLifecycle: {enabled: false}}}`, func(c *cfg) {
			c.Checks.CRD.VersionLifecycle.Enabled = false
		}},
		{"liveChecksTimeout compound", `liveChecksTimeout: 1h30m`, func(c *cfg) { c.LiveChecksTimeout = 90 * time.Minute }},
		{"liveChecksTimeout short", `liveChecksTimeout: 250ms`, func(c *cfg) { c.LiveChecksTimeout = 250 * time.Millisecond }},

		{"sameVersion disabled", `checks: {sameVersion: {enabled: false}}`,
			func(c *cfg) { c.Checks.SameVersion.Enabled = false }},
		{"sameVersion unhandledFailureMode Open", `checks: {sameVersion: {unhandledFailureMode: Open}}`,
			func(c *cfg) { c.Checks.SameVersion.UnhandledFailureMode = config.FailModeOpen }},
		{"sameVersion unhandledFailureMode lowercase", `checks: {sameVersion: {unhandledFailureMode: closed}}`,
			func(c *cfg) { c.Checks.SameVersion.UnhandledFailureMode = config.FailModeClosed }},
		{"servedVersion unhandledFailureMode", `checks: {servedVersion: {unhandledFailureMode: OPEN}}`,
			func(c *cfg) { c.Checks.ServedVersion.UnhandledFailureMode = config.FailModeOpen }},
		{"servedVersion ignoreConversion", `checks: {servedVersion: {ignoreConversion: false}}`,
			func(c *cfg) { c.Checks.ServedVersion.IgnoreConversion = false }},
		{"servedVersion disabled", `checks: {servedVersion: {enabled: false}}`,
			func(c *cfg) { c.Checks.ServedVersion.Enabled = false }},

		{"enum addition Strict", `checks: {sameVersion: {enum: {additionEnforcement: Strict}}}`,
			func(c *cfg) { c.Checks.SameVersion.Enum.AdditionEnforcement = config.EnforcementStrict }},
		{"enum addition none lowercase", `checks: {sameVersion: {enum: {additionEnforcement: none}}}`,
			func(c *cfg) { c.Checks.SameVersion.Enum.AdditionEnforcement = config.EnforcementNone }},
		{"enum addition IfPreviouslyConstrained any case", `
checks:
  sameVersion: {enum: {additionEnforcement: Strict}}
  servedVersion: {enum: {additionEnforcement: ifpreviouslyconstrained}}
`, func(c *cfg) {
			c.Checks.SameVersion.Enum.AdditionEnforcement = config.EnforcementStrict
			c.Checks.ServedVersion.Enum.AdditionEnforcement = config.EnforcementIfPreviouslyConstrained
		}},
		{"enum removal", `checks: {sameVersion: {enum: {removalEnforcement: None, enabled: true}}}`,
			func(c *cfg) { c.Checks.SameVersion.Enum.RemovalEnforcement = config.EnforcementNone }},
		{"default", `
checks:
  sameVersion:
    default: {enabled: false, changeEnforcement: None, removalEnforcement: NONE, additionEnforcement: none}
`, func(c *cfg) {
			c.Checks.SameVersion.Default = config.DefaultCheck{Enabled: false, ChangeEnforcement: config.EnforcementNone,
				RemovalEnforcement: config.EnforcementNone, AdditionEnforcement: config.EnforcementNone}
		}},
		{"required", `checks: {sameVersion: {required: {newEnforcement: None}}}`,
			func(c *cfg) { c.Checks.SameVersion.Required.NewEnforcement = config.EnforcementNone }},
		{"type", `checks: {servedVersion: {type: {enabled: false, changeEnforcement: None}}}`,
			func(c *cfg) {
				c.Checks.ServedVersion.Type = config.TypeCheck{ChangeEnforcement: config.EnforcementNone}
			}},
		{"max and min checks", `
checks:
  sameVersion:
    maximum: {additionEnforcement: None}
    maxLength: {decreaseEnforcement: None}
    maxItems: {enabled: false}
    maxProperties: {additionEnforcement: None, decreaseEnforcement: None}
    minimum: {increaseEnforcement: None}
    minLength: {additionEnforcement: None}
    minItems: {enabled: false}
    minProperties: {additionEnforcement: None, increaseEnforcement: None}
`, func(c *cfg) {
			v := &c.Checks.SameVersion
			v.Maximum.AdditionEnforcement = config.EnforcementNone
			v.MaxLength.DecreaseEnforcement = config.EnforcementNone
			v.MaxItems.Enabled = false
			v.MaxProperties = config.MaxCheck{Enabled: true, AdditionEnforcement: config.EnforcementNone, DecreaseEnforcement: config.EnforcementNone}
			v.Minimum.IncreaseEnforcement = config.EnforcementNone
			v.MinLength.AdditionEnforcement = config.EnforcementNone
			v.MinItems.Enabled = false
			v.MinProperties = config.MinCheck{Enabled: true, AdditionEnforcement: config.EnforcementNone, IncreaseEnforcement: config.EnforcementNone}
		}},
		{"toggles", `
checks:
  sameVersion: {pattern: {enabled: false}, celValidation: {enabled: true}}
  servedVersion: {uniqueItems: {enabled: false}}
`, func(c *cfg) {
			c.Checks.SameVersion.Toggles = map[string]bool{config.CheckPattern: false, config.CheckCELValidation: true}
			c.Checks.ServedVersion.Toggles = map[string]bool{config.CheckUniqueItems: false}
		}},
		{"crd checks", `
checks:
  crd:
    scope: {enabled: false}
    crdDeletion: {enabled: false}
    existingResources: {enabled: true}
`, func(c *cfg) {
			c.Checks.CRD.Scope.Enabled = false
			c.Checks.CRD.CRDDeletion.Enabled = false
		}},

		// The documented alias of crd-diff's configuration.
		{"alias versions.sameVersion", `checks: {versions: {sameVersion: {required: {newEnforcement: None}}}}`,
			func(c *cfg) { c.Checks.SameVersion.Required.NewEnforcement = config.EnforcementNone }},
		{"alias versions.servedVersion", `checks: {versions: {servedVersion: {enabled: false, unhandledFailureMode: open}}}`,
			func(c *cfg) {
				c.Checks.ServedVersion.Enabled = false
				c.Checks.ServedVersion.UnhandledFailureMode = config.FailModeOpen
			}},
		{"different settings through different spellings merge", `
checks:
  sameVersion: {enum: {enabled: false}}
  versions: {sameVersion: {type: {enabled: false}, enum: {removalEnforcement: None}}, servedVersion: {pattern: {enabled: false}}}
  servedVersion: {pattern: {}}
`, func(c *cfg) {
			c.Checks.SameVersion.Enum.Enabled = false
			c.Checks.SameVersion.Enum.RemovalEnforcement = config.EnforcementNone
			c.Checks.SameVersion.Type.Enabled = false
			c.Checks.ServedVersion.Toggles = map[string]bool{config.CheckPattern: false}
		}},

		{"exemptions", `
exemptions:
- crd: widgets.example.com
  checks: [enum, required]
  reason: reviewed in PR 123
- crd: gadgets.example.com
- crd: widgets.example.com
  checks: [enum, scope, servedVersion, unhandled, existingResources]
- crd: things.example.com
  checks: []
  reason: ""
`, func(c *cfg) {
			c.Waivers = []config.Waiver{
				{CRD: "widgets.example.com", Checks: []string{"enum", "required"}, Reason: "reviewed in PR 123", Source: config.SourceSettings},
				{CRD: "gadgets.example.com", Source: config.SourceSettings},
				{CRD: "widgets.example.com", Checks: []string{"enum", "scope", "servedVersion", "unhandled", "existingResources"}, Source: config.SourceSettings},
				{CRD: "things.example.com", Source: config.SourceSettings},
			}
		}},

		{"waivers", `
waivers:
- fingerprint: 1a2b3c4d5e6f
  reason: reviewed in PR 123
  expires: "2026-12-31"
  owner: team-widgets
- crd: widgets.example.com
  checks: [enum]
  path: ^.spec.*
  reason: "  values renamed  "
- fingerprint: 0123456789ab
  crd: gadgets.example.com
  reason: r
exemptions:
- crd: old.example.com
`, func(c *cfg) {
			c.Waivers = []config.Waiver{
				{CRD: "old.example.com", Source: config.SourceSettings},
				{Fingerprint: "1a2b3c4d5e6f", Reason: "reviewed in PR 123", Expires: day("2026-12-31"), Owner: "team-widgets", Source: config.SourceSettings},
				{CRD: "widgets.example.com", Checks: []string{"enum"}, Path: "^.spec.*", Reason: "values renamed", Source: config.SourceSettings},
				{Fingerprint: "0123456789ab", CRD: "gadgets.example.com", Reason: "r", Source: config.SourceSettings},
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := config.Default()
			tc.want(&want)
			got, err := decodeYAML(t, tc.in)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestDecodeEveryOption sets each option of every check, one at a time and
// through every spelling, and asserts that exactly the matching field of
// the typed config changes. Keys are derived from the Go field names, so a
// field the decoder does not wire (or wires to the wrong place) fails.
func TestDecodeEveryOption(t *testing.T) {
	type option struct {
		path  string // YAML key path
		value any
		set   func(c *config.Settings)
	}
	var opts []option

	// setField sets a bool field to false, an enforcement to None (or, for
	// one that defaults to None, to Strict): a value that differs from the
	// default.
	setField := func(fv reflect.Value) {
		switch {
		case fv.Kind() == reflect.Bool:
			fv.SetBool(false)
		case fv.String() == string(config.EnforcementNone):
			fv.SetString(string(config.EnforcementStrict))
		default:
			fv.SetString(string(config.EnforcementNone))
		}
	}
	optionValue := func(sub reflect.StructField) any {
		if sub.Type.Kind() == reflect.Bool {
			return false
		}
		return "None"
	}

	crdType := reflect.TypeOf(config.CRDChecks{})
	for i := 0; i < crdType.NumField(); i++ {
		f := crdType.Field(i)
		key := lowerCamel(f.Name)
		assert.Contains(t, config.CRDCheckIDs, key)
		for j := 0; j < f.Type.NumField(); j++ {
			i, j := i, j
			sub := f.Type.Field(j)
			opts = append(opts, option{"checks.crd." + key + "." + lowerCamel(sub.Name), optionValue(sub), func(c *config.Settings) {
				setField(reflect.ValueOf(&c.Checks.CRD).Elem().Field(i).Field(j))
			}})
		}
	}
	assert.Equal(t, len(config.CRDCheckIDs), crdType.NumField())

	pairs := []struct {
		spellings []string
		get       func(c *config.Settings) *config.VersionChecks
	}{
		{[]string{"checks.sameVersion", "checks.versions.sameVersion"},
			func(c *config.Settings) *config.VersionChecks { return &c.Checks.SameVersion }},
		{[]string{"checks.servedVersion", "checks.versions.servedVersion"},
			func(c *config.Settings) *config.VersionChecks { return &c.Checks.ServedVersion.VersionChecks }},
	}
	vcType := reflect.TypeOf(config.VersionChecks{})
	for _, pair := range pairs {
		get := pair.get
		for _, prefix := range pair.spellings {
			opts = append(opts,
				option{prefix + ".enabled", false, func(c *config.Settings) { get(c).Enabled = false }},
				option{prefix + ".unhandledFailureMode", "open", func(c *config.Settings) {
					get(c).UnhandledFailureMode = config.FailModeOpen
				}})
			structured := map[string]bool{}
			for i := 0; i < vcType.NumField(); i++ {
				f := vcType.Field(i)
				if f.Type.Kind() != reflect.Struct {
					continue
				}
				id := lowerCamel(f.Name)
				structured[id] = true
				for j := 0; j < f.Type.NumField(); j++ {
					i, j := i, j
					sub := f.Type.Field(j)
					opts = append(opts, option{prefix + "." + id + "." + lowerCamel(sub.Name), optionValue(sub), func(c *config.Settings) {
						setField(reflect.ValueOf(get(c)).Elem().Field(i).Field(j))
					}})
				}
			}
			for _, id := range config.PropertyCheckIDs {
				if structured[id] {
					continue
				}
				id := id
				opts = append(opts, option{prefix + "." + id + ".enabled", false, func(c *config.Settings) {
					get(c).Toggles = map[string]bool{id: false}
				}})
			}
			assert.Len(t, structured, 14, "property checks with options")
		}
	}
	for _, prefix := range []string{"checks.servedVersion", "checks.versions.servedVersion"} {
		opts = append(opts, option{prefix + ".ignoreConversion", false, func(c *config.Settings) {
			c.Checks.ServedVersion.IgnoreConversion = false
		}})
	}

	// 15 CRD checks (enabled, plus servedVersionRemoval.unservedEnforcement,
	// storagePruning.readModifyWriteEnforcement,
	// managedFields.unservedEnforcement,
	// versionLifecycle.notDeprecatedEnforcement and
	// conversionWebhook.annotationEnforcement);
	// per spelling of each pair: enabled, unhandledFailureMode, the fields
	// of the 14 checks with options (enum 3, default 4, required 2, type 2,
	// 8 bounds x 3, listType 3, mapType 2), the toggles; 2 ignoreConversion.
	require.Len(t, opts, 15+5+2*2*(2+(3+4+2+2+8*3+3+2)+(len(config.PropertyCheckIDs)-14))+2)

	// Every enforcement option rejects unknown values; each accepts Strict,
	// Warn and None, except enum.additionEnforcement, which accepts Strict,
	// IfPreviouslyConstrained and None.
	enforcementOpts := 0
	for _, o := range opts {
		if o.value != "None" {
			continue
		}
		enforcementOpts++
		_, err := config.Decode(nest(o.path, "Sometimes"))
		assert.ErrorIs(t, err, config.ErrInvalidValue, o.path)
		ipc := strings.HasSuffix(o.path, ".enum.additionEnforcement")
		allowed := "None, Strict, Warn"
		if ipc {
			allowed = "IfPreviouslyConstrained, None, Strict"
		}
		assert.EqualError(t, err, o.path+`: unknown value "Sometimes" (allowed: `+allowed+`)`)
		_, err = config.Decode(nest(o.path, "ifPreviouslyConstrained"))
		if ipc {
			assert.NoError(t, err, o.path)
		} else {
			assert.EqualError(t, err, o.path+`: unknown value "ifPreviouslyConstrained" (allowed: None, Strict, Warn)`)
		}
		_, err = config.Decode(nest(o.path, "warn"))
		if ipc {
			assert.EqualError(t, err, o.path+`: unknown value "warn" (allowed: IfPreviouslyConstrained, None, Strict)`)
		} else {
			assert.NoError(t, err, o.path)
		}
	}
	assert.Equal(t, 5+2*2*(23+3), enforcementOpts)

	seen := map[string]bool{}
	for _, o := range opts {
		t.Run(o.path, func(t *testing.T) {
			require.False(t, seen[o.path], "duplicate option")
			seen[o.path] = true
			want := config.Default()
			o.set(&want)
			require.NotEqual(t, config.Default(), want, "option must differ from the default")

			// As Go maps (the test does not go through YAML here).
			got, err := config.Decode(nest(o.path, o.value))
			require.NoError(t, err)
			assert.Equal(t, want, got)

			// And as YAML text.
			bs, err := yaml.Marshal(nest(o.path, o.value))
			require.NoError(t, err)
			got, err = decodeYAML(t, string(bs))
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// TestDecodeGoValues feeds values of the Go types YAML decoders produce.
func TestDecodeGoValues(t *testing.T) {
	for _, n := range []any{int(3), int8(3), int16(3), int32(3), int64(3), uint(3), uint8(3),
		uint16(3), uint32(3), uint64(3), float32(3), float64(3), json.Number("3"), json.Number("3.0")} {
		got, err := config.Decode(map[string]any{"maxFindingsPerCRD": n})
		require.NoError(t, err, "%T", n)
		assert.Equal(t, 3, got.MaxFindingsPerCRD, "%T", n)
	}

	raw := map[string]any{
		"mode": "warn",
		"checks": map[any]any{ // gopkg.in/yaml.v2 style maps
			"sameVersion": map[any]any{"enum": map[string]any{"enabled": false}},
		},
		"exemptions": []map[string]any{
			{"crd": "a.example.com", "checks": []string{"enum"}},
			{"crd": "b.example.com", "checks": []any{"type"}},
		},
	}
	before, err := json.Marshal(raw["exemptions"])
	require.NoError(t, err)
	got, err := config.Decode(raw)
	require.NoError(t, err)
	want := config.Default()
	want.Mode = config.ModeWarn
	want.Checks.SameVersion.Enum.Enabled = false
	want.Waivers = []config.Waiver{{CRD: "a.example.com", Checks: []string{"enum"}, Source: config.SourceSettings},
		{CRD: "b.example.com", Checks: []string{"type"}, Source: config.SourceSettings}}
	assert.Equal(t, want, got)

	after, err := json.Marshal(raw["exemptions"])
	require.NoError(t, err)
	assert.Equal(t, before, after, "Decode must not modify its input")
}

func TestDecodeErrors(t *testing.T) {
	const sameVersionKeys = "additionalProperties, allOf, anyOf, celValidation, default, embeddedResource, enabled, enum, " +
		"exclusiveMaximum, exclusiveMinimum, format, intOrString, listType, mapType, maxItems, maxLength, " +
		"maxProperties, maximum, minItems, minLength, minProperties, minimum, multipleOf, not, nullable, " +
		"oneOf, pattern, preserveUnknownFields, required, type, unhandledFailureMode, uniqueItems"
	const servedVersionKeys = "additionalProperties, allOf, anyOf, celValidation, default, embeddedResource, enabled, enum, " +
		"exclusiveMaximum, exclusiveMinimum, format, ignoreConversion, intOrString, listType, mapType, maxItems, maxLength, " +
		"maxProperties, maximum, minItems, minLength, minProperties, minimum, multipleOf, not, nullable, " +
		"oneOf, pattern, preserveUnknownFields, required, type, unhandledFailureMode, uniqueItems"
	// Every ID but apiserverRejects, which cannot be exempted.
	allIDs := strings.Replace(strings.Replace(strings.Join(config.AllCheckIDs(), ", "), "apiserverRejects, ", "", 1), ", staleWaiver", "", 1)

	cases := []struct {
		name string
		in   string
		raw  map[string]any // used instead of in when set
		want []string       // the error's lines, exactly
		kind error
	}{
		{name: "unknown top-level key", in: `mod: warn`, kind: config.ErrUnknownKey,
			want: []string{`mod: unknown key (allowed: acceptDataLoss, alphaVersionEnforcement, annotationWaivers, checks, exemptions, failMode, liveChecksTimeout, maxFindingsPerCRD, mode, unaffectedEnforcement, waivers, webhook)`}},
		{name: "keys are case-sensitive", in: `failmode: open`, kind: config.ErrUnknownKey,
			want: []string{`failmode: unknown key (allowed: acceptDataLoss, alphaVersionEnforcement, annotationWaivers, checks, exemptions, failMode, liveChecksTimeout, maxFindingsPerCRD, mode, unaffectedEnforcement, waivers, webhook)`}},
		{name: "mode type", in: `mode: 5`, kind: config.ErrInvalidType,
			want: []string{`mode: must be a string, got int`}},
		{name: "mode type from Go int", raw: map[string]any{"mode": 5}, kind: config.ErrInvalidType,
			want: []string{`mode: must be a string, got int`}},
		{name: "mode bool", in: `mode: true`, kind: config.ErrInvalidType,
			want: []string{`mode: must be a string, got bool`}},
		{name: "mode value", in: `mode: fatal`, kind: config.ErrInvalidValue,
			want: []string{`mode: unknown value "fatal" (allowed: error, warn)`}},
		{name: "failMode value", in: `failMode: ajar`, kind: config.ErrInvalidValue,
			want: []string{`failMode: unknown value "ajar" (allowed: closed, open)`}},
		{name: "failMode map", in: `failMode: {open: true}`, kind: config.ErrInvalidType,
			want: []string{`failMode: must be a string, got map`}},
		{name: "maxFindingsPerCRD negative", in: `maxFindingsPerCRD: -1`, kind: config.ErrInvalidValue,
			want: []string{`maxFindingsPerCRD: must be an integer >= 0, got -1`}},
		{name: "maxFindingsPerCRD fraction", in: `maxFindingsPerCRD: 1.5`, kind: config.ErrInvalidValue,
			want: []string{`maxFindingsPerCRD: must be an integer >= 0, got 1.5`}},
		{name: "maxFindingsPerCRD string", in: `maxFindingsPerCRD: "10"`, kind: config.ErrInvalidType,
			want: []string{`maxFindingsPerCRD: must be an integer, got string`}},
		{name: "maxFindingsPerCRD list", in: `maxFindingsPerCRD: [1]`, kind: config.ErrInvalidType,
			want: []string{`maxFindingsPerCRD: must be an integer, got list`}},
		{name: "liveChecksTimeout without unit", in: `liveChecksTimeout: 300`, kind: config.ErrInvalidType,
			want: []string{`liveChecksTimeout: must be a string, a Go duration such as 30s, 5m or 1h30m (units: ns, us, ms, s, m, h); got int`}},
		{name: "liveChecksTimeout words", in: `liveChecksTimeout: 5 minutes`, kind: config.ErrInvalidValue,
			want: []string{`liveChecksTimeout: invalid duration "5 minutes": must be a Go duration such as 30s, 5m or 1h30m (units: ns, us, ms, s, m, h)`}},
		{name: "liveChecksTimeout unit only as a number string", in: `liveChecksTimeout: "300"`, kind: config.ErrInvalidValue,
			want: []string{`liveChecksTimeout: invalid duration "300": must be a Go duration such as 30s, 5m or 1h30m (units: ns, us, ms, s, m, h)`}},
		{name: "liveChecksTimeout zero", in: `liveChecksTimeout: 0s`, kind: config.ErrInvalidValue,
			want: []string{`liveChecksTimeout: must be greater than 0, got "0s"`}},
		{name: "liveChecksTimeout negative", in: `liveChecksTimeout: -1m`, kind: config.ErrInvalidValue,
			want: []string{`liveChecksTimeout: must be greater than 0, got "-1m"`}},
		{name: "liveChecksTimeout map", in: `liveChecksTimeout: {minutes: 5}`, kind: config.ErrInvalidType,
			want: []string{`liveChecksTimeout: must be a string, a Go duration such as 30s, 5m or 1h30m (units: ns, us, ms, s, m, h); got map`}},
		{name: "maxFindingsPerCRD Go int64 negative", raw: map[string]any{"maxFindingsPerCRD": int64(-3)}, kind: config.ErrInvalidValue,
			want: []string{`maxFindingsPerCRD: must be an integer >= 0, got -3`}},

		{name: "checks not a map", in: `checks: [scope]`, kind: config.ErrInvalidType,
			want: []string{`checks: must be a map, got list`}},
		{name: "unknown checks key", in: `checks: {enum: {enabled: false}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.enum: unknown key (allowed: crd, sameVersion, servedVersion, versions)`}},
		{name: "unknown crd check", in: `checks: {crd: {scopee: {enabled: false}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.crd.scopee: unknown key (allowed: apiserverRejects, conversionOrdering, conversionWebhook, crdDeletion, existingFieldRemoval, existingResources, managedFields, ownerReferences, scope, selectableFields, servedVersionRemoval, storagePruning, storedVersionRemoval, subresources, versionLifecycle)`}},
		{name: "versionLifecycle keys", in: `checks: {crd: {versionLifecycle: {enforcement: Strict}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.crd.versionLifecycle.enforcement: unknown key (allowed: enabled, notDeprecatedEnforcement)`}},
		{name: "versionLifecycle notDeprecatedEnforcement value", in: `checks: {crd: {versionLifecycle: {notDeprecatedEnforcement: Lenient}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.crd.versionLifecycle.notDeprecatedEnforcement: unknown value "Lenient" (allowed: None, Strict, Warn)`}},
		{name: "webhook unknown key", in: `webhook: {revealValues: true}`, kind: config.ErrUnknownKey,
			want: []string{`webhook.revealValues: unknown key (allowed: conversion, revealStoredValues)`}},
		{name: "webhook conversion unknown key", in: `webhook: {conversion: {objects: 3}}`, kind: config.ErrUnknownKey,
			want: []string{`webhook.conversion.objects: unknown key (allowed: maxObjects, timeout)`}},
		{name: "webhook conversion maxObjects 0", in: `webhook: {conversion: {maxObjects: 0}}`, kind: config.ErrInvalidValue,
			want: []string{`webhook.conversion.maxObjects: must be an integer > 0, got 0`}},
		{name: "webhook conversion timeout", in: `webhook: {conversion: {timeout: 3}}`, kind: config.ErrInvalidType,
			want: []string{`webhook.conversion.timeout: must be a string, a Go duration such as 30s, 5m or 1h30m (units: ns, us, ms, s, m, h); got int`}},
		{name: "webhook revealStoredValues type", in: `webhook: {revealStoredValues: "yes"}`, kind: config.ErrInvalidType,
			want: []string{`webhook.revealStoredValues: must be a bool, got string`}},
		{name: "versionLifecycle enabled type", in: `checks: {crd: {versionLifecycle: {enabled: "yes"}}}`, kind: config.ErrInvalidType,
			want: []string{`checks.crd.versionLifecycle.enabled: must be a bool, got string`}},
		{name: "alphaVersionEnforcement value", in: `alphaVersionEnforcement: Lenient`, kind: config.ErrInvalidValue,
			want: []string{`alphaVersionEnforcement: unknown value "Lenient" (allowed: Strict, Warn)`}},
		{name: "alphaVersionEnforcement None is not a value", in: `alphaVersionEnforcement: None`, kind: config.ErrInvalidValue,
			want: []string{`alphaVersionEnforcement: unknown value "None" (allowed: Strict, Warn)`}},
		{name: "alphaVersionEnforcement type", in: `alphaVersionEnforcement: true`, kind: config.ErrInvalidType,
			want: []string{`alphaVersionEnforcement: must be a string, got bool`}},
		{name: "servedVersionRemoval keys", in: `checks: {crd: {servedVersionRemoval: {unserved: Warn}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.crd.servedVersionRemoval.unserved: unknown key (allowed: enabled, unservedEnforcement)`}},
		{name: "servedVersionRemoval unservedEnforcement value", in: `checks: {crd: {servedVersionRemoval: {unservedEnforcement: Loud}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.crd.servedVersionRemoval.unservedEnforcement: unknown value "Loud" (allowed: None, Strict, Warn)`}},
		{name: "listType keys", in: `checks: {sameVersion: {listType: {changeEnforcement: Warn}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.listType.changeEnforcement: unknown key (allowed: coarseningEnforcement, enabled, uniquenessEnforcement)`}},
		{name: "mapType keys", in: `checks: {servedVersion: {mapType: {coarseningEnforcement: Warn}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.servedVersion.mapType.coarseningEnforcement: unknown key (allowed: changeEnforcement, enabled)`}},
		{name: "mapType changeEnforcement value", in: `checks: {sameVersion: {mapType: {changeEnforcement: IfPreviouslyConstrained}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.sameVersion.mapType.changeEnforcement: unknown value "IfPreviouslyConstrained" (allowed: None, Strict, Warn)`}},
		{name: "crd check not a map", in: `checks: {crd: {scope: false}}`, kind: config.ErrInvalidType,
			want: []string{`checks.crd.scope: must be a map, got bool`}},
		{name: "toggle key", in: `checks: {crd: {scope: {enable: false}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.crd.scope.enable: unknown key (allowed: enabled)`}},
		{name: "enabled string", in: `checks: {crd: {scope: {enabled: "false"}}}`, kind: config.ErrInvalidType,
			want: []string{`checks.crd.scope.enabled: must be a bool, got string`}},
		{name: "sameVersion unknown key", in: `checks: {sameVersion: {enumm: {}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.enumm: unknown key (allowed: ` + sameVersionKeys + `)`}},
		{name: "ignoreConversion only under servedVersion", in: `checks: {sameVersion: {ignoreConversion: false}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.ignoreConversion: unknown key (allowed: ` + sameVersionKeys + `)`}},
		{name: "servedVersion unknown key", in: `checks: {servedVersion: {servedVersion: {}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.servedVersion.servedVersion: unknown key (allowed: ` + servedVersionKeys + `)`}},
		{name: "ignoreConversion type", in: `checks: {servedVersion: {ignoreConversion: "yes please"}}`, kind: config.ErrInvalidType,
			want: []string{`checks.servedVersion.ignoreConversion: must be a bool, got string`}},
		{name: "sameVersion enabled type", in: `checks: {sameVersion: {enabled: 0}}`, kind: config.ErrInvalidType,
			want: []string{`checks.sameVersion.enabled: must be a bool, got int`}},
		{name: "unhandledFailureMode value", in: `checks: {sameVersion: {unhandledFailureMode: Ajar}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.sameVersion.unhandledFailureMode: unknown value "Ajar" (allowed: closed, open)`}},
		{name: "enum additionEnforcement value", in: `checks: {sameVersion: {enum: {additionEnforcement: Sometimes}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.sameVersion.enum.additionEnforcement: unknown value "Sometimes" (allowed: IfPreviouslyConstrained, None, Strict)`}},
		{name: "enforcement type", in: `checks: {sameVersion: {enum: {additionEnforcement: 1}}}`, kind: config.ErrInvalidType,
			want: []string{`checks.sameVersion.enum.additionEnforcement: must be a string, got int`}},
		{name: "IfPreviouslyConstrained only for enum additions", in: `checks: {sameVersion: {enum: {removalEnforcement: IfPreviouslyConstrained}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.sameVersion.enum.removalEnforcement: unknown value "IfPreviouslyConstrained" (allowed: None, Strict, Warn)`}},
		{name: "IfPreviouslyConstrained not for default", in: `checks: {servedVersion: {default: {additionEnforcement: IfPreviouslyConstrained}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.servedVersion.default.additionEnforcement: unknown value "IfPreviouslyConstrained" (allowed: None, Strict, Warn)`}},
		{name: "no Strict fallback for unknown enforcement", in: `checks: {sameVersion: {type: {changeEnforcement: Lenient}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.sameVersion.type.changeEnforcement: unknown value "Lenient" (allowed: None, Strict, Warn)`}},
		{name: "max check has no increaseEnforcement", in: `checks: {sameVersion: {maximum: {increaseEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.maximum.increaseEnforcement: unknown key (allowed: additionEnforcement, decreaseEnforcement, enabled)`}},
		{name: "min check has no decreaseEnforcement", in: `checks: {sameVersion: {minLength: {decreaseEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.minLength.decreaseEnforcement: unknown key (allowed: additionEnforcement, enabled, increaseEnforcement)`}},
		{name: "enum keys", in: `checks: {sameVersion: {enum: {changeEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.enum.changeEnforcement: unknown key (allowed: additionEnforcement, enabled, removalEnforcement)`}},
		{name: "default keys", in: `checks: {sameVersion: {default: {newEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.default.newEnforcement: unknown key (allowed: additionEnforcement, changeEnforcement, enabled, removalEnforcement)`}},
		{name: "required keys", in: `checks: {sameVersion: {required: {additionEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.required.additionEnforcement: unknown key (allowed: enabled, newEnforcement)`}},
		{name: "type keys", in: `checks: {sameVersion: {type: {newEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.type.newEnforcement: unknown key (allowed: changeEnforcement, enabled)`}},
		{name: "toggle check has only enabled", in: `checks: {sameVersion: {pattern: {changeEnforcement: None}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.sameVersion.pattern.changeEnforcement: unknown key (allowed: enabled)`}},
		{name: "toggle check enabled type", in: `checks: {servedVersion: {pattern: {enabled: no thanks}}}`, kind: config.ErrInvalidType,
			want: []string{`checks.servedVersion.pattern.enabled: must be a bool, got string`}},

		{name: "alias holds only pair checks", in: `checks: {versions: {crd: {}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.versions.crd: unknown key (allowed: sameVersion, servedVersion)`}},
		{name: "alias not a map", in: `checks: {versions: sameVersion}`, kind: config.ErrInvalidType,
			want: []string{`checks.versions: must be a map, got string`}},
		{name: "errors inside an alias name the written path", in: `checks: {versions: {servedVersion: {enum: {removalEnforcement: Sometimes}}}}`, kind: config.ErrInvalidValue,
			want: []string{`checks.versions.servedVersion.enum.removalEnforcement: unknown value "Sometimes" (allowed: None, Strict, Warn)`}},
		{name: "one alias only: checks.version is not one", in: `checks: {version: {sameVersion: {enum: {enabled: false}}}}`, kind: config.ErrUnknownKey,
			want: []string{`checks.version: unknown key (allowed: crd, sameVersion, servedVersion, versions)`}},
		{name: "same setting twice: canonical and alias", in: `
checks:
  sameVersion: {enum: {enabled: false}}
  versions: {sameVersion: {enum: {enabled: false}}}
`, kind: config.ErrDuplicateSetting,
			want: []string{`checks.versions.sameVersion.enum.enabled: duplicate setting: already given as checks.sameVersion.enum.enabled (use one spelling)`}},
		{name: "same toggle twice", in: `
checks:
  servedVersion: {pattern: {enabled: false}}
  versions: {servedVersion: {pattern: {enabled: false}}}
`, kind: config.ErrDuplicateSetting,
			want: []string{`checks.versions.servedVersion.pattern.enabled: duplicate setting: already given as checks.servedVersion.pattern.enabled (use one spelling)`}},

		{name: "exemptions not a list", in: `exemptions: {crd: widgets.example.com}`, kind: config.ErrInvalidType,
			want: []string{`exemptions: must be a list, got map`}},
		{name: "exemption not a map", in: `exemptions: [widgets.example.com]`, kind: config.ErrInvalidType,
			want: []string{`exemptions[0]: must be a map, got string`}},
		{name: "exemption null", in: "exemptions:\n- crd: a.example.com\n-\n", kind: config.ErrInvalidType,
			want: []string{`exemptions[1]: must be a map, got null`}},
		{name: "exemption without crd", in: `exemptions: [{reason: trust me}]`, kind: config.ErrMissingKey,
			want: []string{`exemptions[0].crd: required (unless fingerprint is given): the CRD's metadata.name, e.g. widgets.example.com`}},
		{name: "exemption null crd", in: `exemptions: [{crd: null}]`, kind: config.ErrMissingKey,
			want: []string{`exemptions[0].crd: required (unless fingerprint is given): the CRD's metadata.name, e.g. widgets.example.com`}},
		{name: "exemption empty crd", in: `exemptions: [{crd: ""}]`, kind: config.ErrInvalidValue,
			want: []string{`exemptions[0].crd: must not be empty: the CRD's metadata.name, e.g. widgets.example.com`}},
		{name: "exemption blank crd", in: `exemptions: [{crd: "  "}]`, kind: config.ErrInvalidValue,
			want: []string{`exemptions[0].crd: must not be empty: the CRD's metadata.name, e.g. widgets.example.com`}},
		{name: "exemption crd type", in: `exemptions: [{crd: 5}]`, kind: config.ErrInvalidType,
			want: []string{`exemptions[0].crd: must be a string, got int`}},
		{name: "exemption problems sorted by path", in: `exemptions: [{reason: 5}]`,
			want: []string{
				`exemptions[0].crd: required (unless fingerprint is given): the CRD's metadata.name, e.g. widgets.example.com`,
				`exemptions[0].reason: must be a string, got int`,
			}},
		{name: "exemption unknown key", in: `exemptions: [{crd: a.example.com, check: [enum]}]`, kind: config.ErrUnknownKey,
			want: []string{`exemptions[0].check: unknown key (allowed: checks, crd, expires, fingerprint, owner, path, reason)`}},
		{name: "exemption unknown check ID", in: `exemptions: [{crd: a.example.com, checks: [enum, enumm]}]`, kind: config.ErrInvalidValue,
			want: []string{`exemptions[0].checks[1]: unknown check ID "enumm" (allowed: ` + allIDs + `)`}},
		{name: "exemption check IDs are case-sensitive", in: `exemptions: [{crd: a.example.com, checks: [Enum]}]`, kind: config.ErrInvalidValue,
			want: []string{`exemptions[0].checks[0]: unknown check ID "Enum" (allowed: ` + allIDs + `)`}},
		{name: "apiserverRejects cannot be exempted", in: `exemptions: [{crd: a.example.com, checks: [apiserverRejects]}]`, kind: config.ErrInvalidValue,
			want: []string{`exemptions[0].checks[0]: apiserverRejects cannot be waived: the apiserver refuses the change whatever the config says ` +
				`(to stop checking, set checks.crd.apiserverRejects.enabled: false)`}},
		{name: "waiver without reason", in: `waivers: [{crd: a.example.com, checks: [enum]}]`, kind: config.ErrMissingKey,
			want: []string{`waivers[0].reason: required: say why the findings are acceptable (a review, a migration)`}},
		{name: "waiver blank reason", in: `waivers: [{fingerprint: 1a2b3c4d5e6f, reason: "  "}]`, kind: config.ErrMissingKey,
			want: []string{`waivers[0].reason: required: say why the findings are acceptable (a review, a migration)`}},
		{name: "waiver without crd or fingerprint", in: `waivers: [{checks: [enum], reason: r}]`, kind: config.ErrMissingKey,
			want: []string{`waivers[0].crd: required (unless fingerprint is given): the CRD's metadata.name, e.g. widgets.example.com`}},
		{name: "waiver unknown key", in: `waivers: [{crd: a.example.com, reason: r, expiry: "2026-12-31"}]`, kind: config.ErrUnknownKey,
			want: []string{`waivers[0].expiry: unknown key (allowed: checks, crd, expires, fingerprint, owner, path, reason)`}},
		{name: "waiver bad date", in: `waivers: [{crd: a.example.com, reason: r, expires: "2026-02-30"}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].expires: invalid date "2026-02-30": must be YYYY-MM-DD, the last day the waiver applies (UTC)`}},
		{name: "waiver date with time", in: `waivers: [{crd: a.example.com, reason: r, expires: "2026-12-31T12:00:00Z"}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].expires: invalid date "2026-12-31T12:00:00Z": must be YYYY-MM-DD, the last day the waiver applies (UTC)`}},
		{name: "waiver date unquoted", in: `waivers: [{crd: a.example.com, reason: r, expires: 20261231}]`, kind: config.ErrInvalidType,
			want: []string{`waivers[0].expires: must be a string, got int`}},
		{name: "waiver fingerprint too short", in: `waivers: [{fingerprint: 1a2b3c, reason: r}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].fingerprint: "1a2b3c" is not a fingerprint: 12 lowercase hex digits, as outputs print it ([fp:1a2b3c4d5e6f], JSON fingerprint)`}},
		{name: "waiver fingerprint with the fp: prefix", in: `waivers: [{fingerprint: "fp:1a2b3c4d5e6f", reason: r}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].fingerprint: "fp:1a2b3c4d5e6f" is not a fingerprint: 12 lowercase hex digits, as outputs print it ([fp:1a2b3c4d5e6f], JSON fingerprint)`}},
		{name: "waiver path not a schema path", in: `waivers: [{crd: a.example.com, reason: r, path: spec.size}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].path: "spec.size" is not a schema path: it starts with ^ as outputs print it (^.spec.size; * matches any characters: ^.spec.*)`}},
		{name: "waiver of apiserverRejects", in: `waivers: [{crd: a.example.com, reason: r, checks: [apiserverRejects]}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].checks[0]: apiserverRejects cannot be waived: the apiserver refuses the change whatever the config says ` +
				`(to stop checking, set checks.crd.apiserverRejects.enabled: false)`}},
		{name: "waiver of staleWaiver", in: `waivers: [{crd: a.example.com, reason: r, checks: [staleWaiver]}]`, kind: config.ErrInvalidValue,
			want: []string{`waivers[0].checks[0]: unknown check ID "staleWaiver" (allowed: ` + allIDs + `)`}},
		{name: "exemption checks not a list", in: `exemptions: [{crd: a.example.com, checks: enum}]`, kind: config.ErrInvalidType,
			want: []string{`exemptions[0].checks: must be a list, got string`}},
		{name: "exemption check ID type", in: `exemptions: [{crd: a.example.com, checks: [{enum: true}]}]`, kind: config.ErrInvalidType,
			want: []string{`exemptions[0].checks[0]: must be a string, got map`}},
		{name: "exemption reason type", in: `exemptions: [{crd: a.example.com, reason: [a]}]`, kind: config.ErrInvalidType,
			want: []string{`exemptions[0].reason: must be a string, got list`}},

		{name: "all problems, sorted by path", in: `
mode: loud
failMode: 1
exemptions:
- {crd: a.example.com}
- {crd: b.example.com}
- {}
- {crd: c.example.com}
- {crd: d.example.com}
- {crd: e.example.com}
- {crd: f.example.com}
- {crd: g.example.com}
- {crd: h.example.com}
- {crd: i.example.com}
- {crd: ""}
checks:
  sameVersion: {enum: {additionEnforcement: Sometimes}, foo: 1}
  crd: {scope: {enabled: nope}}
`, want: []string{
			`checks.crd.scope.enabled: must be a bool, got string`,
			`checks.sameVersion.enum.additionEnforcement: unknown value "Sometimes" (allowed: IfPreviouslyConstrained, None, Strict)`,
			`checks.sameVersion.foo: unknown key (allowed: ` + sameVersionKeys + `)`,
			`exemptions[2].crd: required (unless fingerprint is given): the CRD's metadata.name, e.g. widgets.example.com`,
			`exemptions[10].crd: must not be empty: the CRD's metadata.name, e.g. widgets.example.com`,
			`failMode: must be a string, got int`,
			`mode: unknown value "loud" (allowed: error, warn)`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got config.Settings
			var err error
			if tc.raw != nil {
				got, err = config.Decode(tc.raw)
			} else {
				got, err = decodeYAML(t, tc.in)
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, strings.Split(err.Error(), "\n"))
			assert.Equal(t, config.Settings{}, got, "the zero config on error")
			assert.ErrorIs(t, err, config.ErrInvalidConfig)
			var fe *config.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, strings.SplitN(tc.want[0], ": ", 2)[0], fe.Path)
			if tc.kind != nil {
				assert.ErrorIs(t, err, tc.kind)
				assert.Equal(t, tc.kind, fe.Kind)
				for _, other := range []error{config.ErrUnknownKey, config.ErrInvalidType, config.ErrInvalidValue,
					config.ErrMissingKey, config.ErrDuplicateSetting} {
					if other != tc.kind {
						assert.NotErrorIs(t, err, other)
					}
				}
			}
			if len(tc.want) == 1 {
				assert.Same(t, fe, err, "a single problem is returned as its *FieldError")
			}
		})
	}
}

// TestDecodeErrorKinds checks that each problem of a multi-error keeps its
// own sentinel.
func TestDecodeErrorKinds(t *testing.T) {
	_, err := decodeYAML(t, `
mode: 1
failMode: ajar
nope: true
exemptions: [{}]
checks: {sameVersion: {enabled: false}, versions: {sameVersion: {enabled: false}}}
`)
	require.Error(t, err)
	for _, kind := range []error{config.ErrUnknownKey, config.ErrInvalidType, config.ErrInvalidValue,
		config.ErrMissingKey, config.ErrDuplicateSetting, config.ErrInvalidConfig} {
		assert.ErrorIs(t, err, kind)
	}
	var joined interface{ Unwrap() []error }
	require.ErrorAs(t, err, &joined)
	assert.Len(t, joined.Unwrap(), 5)
}

// TestDecodeTestdata decodes the larger configs in testdata/: <name>.yaml
// is a kapp Config; <name>.golden the decoded CRDUpgradeSafety config as
// JSON, or the error text. Run with -update to rewrite the golden files.
func TestDecodeTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			bs, err := os.ReadFile(file)
			require.NoError(t, err)
			raw := ruleConfig(t, string(bs))
			cfg, err := config.Decode(raw)
			var got []byte
			if err != nil {
				got = []byte(err.Error() + "\n")
			} else {
				got, err = json.MarshalIndent(cfg, "", "  ")
				require.NoError(t, err)
				got = append(got, '\n')
			}
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// TestFullConfig pins testdata/full.yaml field by field, so that a wrong
// golden file cannot hide a decoding bug.
func TestFullConfig(t *testing.T) {
	bs, err := os.ReadFile("testdata/full.yaml")
	require.NoError(t, err)
	got, err := config.Decode(ruleConfig(t, string(bs)))
	require.NoError(t, err)

	want := config.Default()
	want.Mode = config.ModeWarn
	want.FailMode = config.FailModeOpen
	want.MaxFindingsPerCRD = 0
	want.LiveChecksTimeout = 90 * time.Second
	want.UnaffectedEnforcement = config.EnforcementWarn
	want.AlphaVersionEnforcement = config.EnforcementWarn
	want.Checks.CRD.VersionLifecycle.NotDeprecatedEnforcement = config.EnforcementStrict
	want.Checks.CRD.ExistingResources.Enabled = false
	want.Checks.CRD.CRDDeletion.Enabled = false
	want.Checks.CRD.ServedVersionRemoval.UnservedEnforcement = config.EnforcementStrict
	want.Checks.CRD.Subresources.Enabled = false
	sv := &want.Checks.SameVersion
	sv.MapType.ChangeEnforcement = config.EnforcementNone
	sv.ListType = config.ListTypeCheck{Enabled: true, CoarseningEnforcement: config.EnforcementStrict, UniquenessEnforcement: config.EnforcementWarn}
	sv.UnhandledFailureMode = config.FailModeClosed
	sv.Enum = config.EnumCheck{Enabled: true, AdditionEnforcement: config.EnforcementNone, RemovalEnforcement: config.EnforcementStrict}
	sv.Default.AdditionEnforcement = config.EnforcementNone
	sv.MaxLength.DecreaseEnforcement = config.EnforcementNone
	sv.MinItems.Enabled = false
	sv.Required.NewEnforcement = config.EnforcementNone
	sv.Toggles = map[string]bool{config.CheckCELValidation: false, config.CheckFormat: false}
	srv := &want.Checks.ServedVersion
	srv.IgnoreConversion = false
	srv.UnhandledFailureMode = config.FailModeOpen
	srv.Type.Enabled = false
	srv.Toggles = map[string]bool{config.CheckPattern: false}
	srv.Enum.AdditionEnforcement = config.EnforcementStrict
	want.Waivers = []config.Waiver{
		{CRD: "widgets.example.com", Checks: []string{"enum", "required"}, Reason: "reviewed in PR 123: no widget uses the removed values", Source: config.SourceSettings},
		{CRD: "gadgets.example.com", Reason: "v2 migration, see RFC-7", Source: config.SourceSettings},
	}
	assert.Equal(t, want, got)
}

// TestDocsExamples decodes every YAML block of docs/config.md: a kapp
// Config's CRDUpgradeSafety entry, or a fragment of the config map (blocks
// of other kinds of resources are skipped).
func TestDocsExamples(t *testing.T) {
	bs, err := os.ReadFile("../../../docs/config.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(bs), -1)
	require.GreaterOrEqual(t, len(blocks), 5, "yaml blocks in docs/config.md")
	configs := 0
	for i, b := range blocks {
		var raw map[string]any
		if strings.Contains(b[1], "kind: ") && !strings.Contains(b[1], "kind: Config") {
			continue // another resource, e.g. a kapp-controller App
		}
		if strings.Contains(b[1], "kind: Config") {
			configs++
			raw = ruleConfig(t, b[1])
		} else {
			require.NoError(t, yaml.Unmarshal([]byte(b[1]), &raw), "block %d:\n%s", i, b[1])
		}
		_, err := config.Decode(raw)
		assert.NoError(t, err, "block %d:\n%s", i, b[1])
	}
	assert.GreaterOrEqual(t, configs, 1, "a full kapp Config example")
}

// ruleConfig returns the config of the CRDUpgradeSafety entry of a kapp
// Config document.
func ruleConfig(t *testing.T, doc string) map[string]any {
	t.Helper()
	var c struct {
		APIVersion     string `json:"apiVersion"`
		Kind           string `json:"kind"`
		PreflightRules []struct {
			Name   string         `json:"name"`
			Config map[string]any `json:"config"`
		} `json:"preflightRules"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &c))
	require.Equal(t, "kapp.k14s.io/v1alpha1", c.APIVersion)
	require.Equal(t, "Config", c.Kind)
	for _, r := range c.PreflightRules {
		if r.Name == "CRDUpgradeSafety" {
			return r.Config
		}
	}
	t.Fatalf("no CRDUpgradeSafety preflight rule in:\n%s", doc)
	return nil
}

// nest builds {a: {b: {c: v}}} from "a.b.c".
func nest(path string, v any) map[string]any {
	keys := strings.Split(path, ".")
	m := map[string]any{keys[len(keys)-1]: v}
	for i := len(keys) - 2; i >= 0; i-- {
		m = map[string]any{keys[i]: m}
	}
	return m
}

// lowerCamel turns a Go field name into its config key:
// MaxLength -> maxLength, CRDDeletion -> crdDeletion.
func lowerCamel(s string) string {
	r := []rune(s)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	if n > 1 && n < len(r) {
		n-- // the last capital of an acronym starts the next word
	}
	for i := 0; i < n; i++ {
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

// walkFields calls fn for every non-struct field reachable from v.
func walkFields(v reflect.Value, path string, fn func(path string, f reflect.Value)) {
	if v.Kind() != reflect.Struct {
		fn(path, v)
		return
	}
	for i := 0; i < v.NumField(); i++ {
		walkFields(v.Field(i), path+"."+v.Type().Field(i).Name, fn)
	}
}

func TestLowerCamel(t *testing.T) {
	for in, want := range map[string]string{"MaxLength": "maxLength", "CRDDeletion": "crdDeletion",
		"Enum": "enum", "Enabled": "enabled", "AdditionEnforcement": "additionEnforcement"} {
		assert.Equal(t, want, lowerCamel(in))
	}
}
