package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Every error Decode reports is a *FieldError that wraps
// ErrInvalidConfig and exactly one of the kind sentinels below, so callers
// can tell problems apart with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every error Decode reports.
	ErrInvalidConfig = errors.New("invalid CRDUpgradeSafety config")
	// ErrUnknownKey: a key the config does not know (typo, wrong level).
	ErrUnknownKey = errors.New("unknown key")
	// ErrInvalidType: a value of the wrong YAML type (a number for a string, ...).
	ErrInvalidType = errors.New("invalid type")
	// ErrInvalidValue: a value of the right type that is not allowed (an
	// unknown mode or enforcement, a negative count, an unknown check ID, an
	// empty CRD name).
	ErrInvalidValue = errors.New("invalid value")
	// ErrMissingKey: a required key is absent (waivers[].reason).
	ErrMissingKey = errors.New("missing key")
	// ErrDuplicateSetting: one setting given through two spellings, e.g.
	// checks.sameVersion.enum.enabled and checks.versions.sameVersion.enum.enabled.
	ErrDuplicateSetting = errors.New("duplicate setting")
)

// FieldError is one problem at one key path of the config.
type FieldError struct {
	// Path is the full key path as written, e.g.
	// "checks.sameVersion.enum.additionEnforcement" or "waivers[2].crd".
	Path string
	// Kind is one of the kind sentinels (ErrUnknownKey, ErrInvalidType, ...).
	Kind error
	// Msg is the human-readable detail, without the path.
	Msg string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// Unwrap makes errors.Is match both Kind and ErrInvalidConfig.
func (e *FieldError) Unwrap() []error { return []error{e.Kind, ErrInvalidConfig} }

// AllCheckIDs returns every known check ID, sorted: the CRD-level checks,
// the property checks, servedVersion, unhandled and staleWaiver. A waiver
// may name all but apiserverRejects and staleWaiver.
func AllCheckIDs() []string {
	ids := make([]string, 0, len(CRDCheckIDs)+len(PropertyCheckIDs)+3)
	ids = append(ids, CRDCheckIDs...)
	ids = append(ids, PropertyCheckIDs...)
	ids = append(ids, CheckServedVersion, CheckUnhandled, CheckStaleWaiver)
	sort.Strings(ids)
	return ids
}

// Decode turns the `config` map of the CRDUpgradeSafety entry of a kapp
// Config's preflightRules into the typed configuration: Default() with the
// given settings applied. A nil or empty map yields Default(). A key whose
// value is null counts as not given.
//
// Decoding is strict: unknown keys, values of the wrong type and unknown
// values are errors naming the full key path and what is allowed. All
// problems are reported, sorted by path, joined with errors.Join (a single
// problem is returned as its *FieldError). On error the returned config is
// the zero value.
func Decode(raw map[string]any) (Settings, error) {
	cfg := Default()
	if len(raw) == 0 {
		return cfg, nil
	}
	d := &decoder{seen: map[string]string{}}
	d.object(loc{}, raw, rootFields(&cfg))
	if err := d.err(); err != nil {
		return Settings{}, err
	}
	return cfg, nil
}

// loc is where a value sits: path as the user wrote it, canon with aliases
// resolved (checks.versions.sameVersion -> checks.sameVersion).
type loc struct{ path, canon string }

func (l loc) key(k string) loc { return loc{join(l.path, k), join(l.canon, k)} }

func (l loc) index(i int) loc {
	s := "[" + strconv.Itoa(i) + "]"
	return loc{l.path + s, l.canon + s}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// fieldFunc decodes the value found at l.
type fieldFunc func(d *decoder, l loc, v any)

// fields is a decoding table: the allowed keys of one map and how to decode
// each value.
type fields map[string]fieldFunc

func (fs fields) allowed() string {
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

type decoder struct {
	errs []*FieldError
	// seen maps the canonical path of every leaf set so far to the path it
	// was set through.
	seen map[string]string
}

func (d *decoder) fail(l loc, kind error, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Path: l.path, Kind: kind, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error {
	switch len(d.errs) {
	case 0:
		return nil
	case 1:
		return d.errs[0]
	}
	sort.SliceStable(d.errs, func(i, j int) bool { return pathLess(d.errs[i].Path, d.errs[j].Path) })
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// claim records that the leaf at l is being set and reports false (after
// recording an error) when the same setting was already given through
// another spelling.
func (d *decoder) claim(l loc) bool {
	if prev, ok := d.seen[l.canon]; ok && prev != l.path {
		d.fail(l, ErrDuplicateSetting, "duplicate setting: already given as %s (use one spelling)", prev)
		return false
	}
	d.seen[l.canon] = l.path
	return true
}

// object decodes a map against a table, visiting keys in sorted order.
func (d *decoder) object(l loc, v any, fs fields) {
	if v == nil {
		return
	}
	m, ok := asMap(v)
	if !ok {
		d.fail(l, ErrInvalidType, "must be a map, got %s", typeName(v))
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kl := l.key(k)
		f, ok := fs[k]
		if !ok {
			d.fail(kl, ErrUnknownKey, "unknown key (allowed: %s)", fs.allowed())
			continue
		}
		f(d, kl, m[k])
	}
}

// list decodes every item of a list with item.
func (d *decoder) list(l loc, v any, item func(d *decoder, l loc, v any)) {
	if v == nil {
		return
	}
	items, ok := asList(v)
	if !ok {
		d.fail(l, ErrInvalidType, "must be a list, got %s", typeName(v))
		return
	}
	for i, it := range items {
		item(d, l.index(i), it)
	}
}

// nested decodes a map value with the table fs.
func nested(fs fields) fieldFunc {
	return func(d *decoder, l loc, v any) { d.object(l, v, fs) }
}

// alias decodes a map whose keys mean the same as if they were written in
// the parent map: checks.versions.sameVersion is checks.sameVersion.
func alias(fs fields) fieldFunc {
	return func(d *decoder, l loc, v any) {
		parent := l.canon[:max(strings.LastIndexByte(l.canon, '.'), 0)]
		d.object(loc{l.path, parent}, v, fs)
	}
}

// leaf decodes a scalar with parse and, when it parses, hands it to set.
// Null means "not given".
func leaf[T any](parse func(d *decoder, l loc, v any) (T, bool), set func(T)) fieldFunc {
	return func(d *decoder, l loc, v any) {
		if v == nil || !d.claim(l) {
			return
		}
		if x, ok := parse(d, l, v); ok {
			set(x)
		}
	}
}

func boolean(p *bool) fieldFunc {
	return leaf(parseBool, func(b bool) { *p = b })
}

func parseBool(d *decoder, l loc, v any) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		d.fail(l, ErrInvalidType, "must be a bool, got %s", typeName(v))
	}
	return b, ok
}

func str(p *string) fieldFunc {
	return leaf(parseString, func(s string) { *p = s })
}

// date decodes an expiry date (YYYY-MM-DD, a day, UTC) into p.
func date(p *time.Time) fieldFunc {
	return leaf(func(d *decoder, l loc, v any) (time.Time, bool) {
		s, ok := parseString(d, l, v)
		if !ok {
			return time.Time{}, false
		}
		t, err := parseDate(s)
		if err != nil {
			d.fail(l, ErrInvalidValue, "%v", err)
			return time.Time{}, false
		}
		return t, true
	}, func(t time.Time) { *p = t })
}

// schemaPath decodes a schema path as outputs print it (it starts with
// ^) into p; example says what one looks like in the key's error.
func schemaPath(p *string, example string) fieldFunc {
	return leaf(func(d *decoder, l loc, v any) (string, bool) {
		s, ok := parseString(d, l, v)
		if ok && !strings.HasPrefix(s, "^") {
			d.fail(l, ErrInvalidValue, "%q is not a schema path: it starts with ^ as outputs print it (%s)", s, example)
			return "", false
		}
		return s, ok
	}, func(s string) { *p = s })
}

func parseString(d *decoder, l loc, v any) (string, bool) {
	s, ok := v.(string)
	if !ok {
		d.fail(l, ErrInvalidType, "must be a string, got %s", typeName(v))
	}
	return s, ok
}

// nonNegativeInt accepts any integral number >= 0.
func nonNegativeInt(p *int) fieldFunc {
	return leaf(func(d *decoder, l loc, v any) (int, bool) {
		n, isNum, ok := toInt(v)
		switch {
		case !isNum:
			d.fail(l, ErrInvalidType, "must be an integer, got %s", typeName(v))
		case !ok:
			d.fail(l, ErrInvalidValue, "must be an integer >= 0, got %v", v)
		case n < 0:
			d.fail(l, ErrInvalidValue, "must be an integer >= 0, got %d", n)
		default:
			return n, true
		}
		return 0, false
	}, func(n int) { *p = n })
}

// positiveInt accepts an integer > 0 (a budget: 0 would probe nothing).
func positiveInt(p *int) fieldFunc {
	return leaf(func(d *decoder, l loc, v any) (int, bool) {
		n, isNum, ok := toInt(v)
		switch {
		case !isNum:
			d.fail(l, ErrInvalidType, "must be an integer, got %s", typeName(v))
		case !ok || n <= 0:
			d.fail(l, ErrInvalidValue, "must be an integer > 0, got %v", v)
		default:
			return n, true
		}
		return 0, false
	}, func(n int) { *p = n })
}

// positiveDuration accepts a Go duration string greater than zero (30s,
// 5m, 1h30m). A bare number is refused: its unit would be a guess.
func positiveDuration(p *time.Duration) fieldFunc {
	const format = "a Go duration such as 30s, 5m or 1h30m (units: ns, us, ms, s, m, h)"
	return leaf(func(d *decoder, l loc, v any) (time.Duration, bool) {
		s, ok := v.(string)
		if !ok {
			d.fail(l, ErrInvalidType, "must be a string, %s; got %s", format, typeName(v))
			return 0, false
		}
		dur, err := time.ParseDuration(s)
		switch {
		case err != nil:
			d.fail(l, ErrInvalidValue, "invalid duration %q: must be %s", s, format)
		case dur <= 0:
			d.fail(l, ErrInvalidValue, "must be greater than 0, got %q", s)
		default:
			return dur, true
		}
		return 0, false
	}, func(dur time.Duration) { *p = dur })
}

// choice accepts one of the names in opts, matched case-insensitively, and
// stores the value it maps to.
func choice[T any](p *T, opts map[string]T) fieldFunc {
	names := make([]string, 0, len(opts))
	for n := range opts {
		names = append(names, n)
	}
	sort.Strings(names)
	return leaf(func(d *decoder, l loc, v any) (T, bool) {
		var zero T
		s, ok := parseString(d, l, v)
		if !ok {
			return zero, false
		}
		for _, n := range names {
			if strings.EqualFold(s, n) {
				return opts[n], true
			}
		}
		d.fail(l, ErrInvalidValue, "unknown value %q (allowed: %s)", s, strings.Join(names, ", "))
		return zero, false
	}, func(x T) { *p = x })
}

var (
	modes           = map[string]Mode{"error": ModeError, "warn": ModeWarn}
	failModes       = map[string]FailMode{"closed": FailModeClosed, "open": FailModeOpen}
	strictWarnNone  = enforcements(EnforcementStrict, EnforcementWarn, EnforcementNone)
	strictWarn      = enforcements(EnforcementStrict, EnforcementWarn)
	enumAdditionEnf = enforcements(EnforcementStrict, EnforcementNone, EnforcementIfPreviouslyConstrained)
)

func enforcements(es ...Enforcement) map[string]Enforcement {
	m := make(map[string]Enforcement, len(es))
	for _, e := range es {
		m[string(e)] = e
	}
	return m
}

// The decoding tables, top down.

func rootFields(c *Settings) fields {
	return fields{
		"mode":                    choice(&c.Mode, modes),
		"failMode":                choice(&c.FailMode, failModes),
		"maxFindingsPerCRD":       nonNegativeInt(&c.MaxFindingsPerCRD),
		"liveChecksTimeout":       positiveDuration(&c.LiveChecksTimeout),
		"unaffectedEnforcement":   choice(&c.UnaffectedEnforcement, strictWarn),
		"alphaVersionEnforcement": choice(&c.AlphaVersionEnforcement, strictWarn),
		"checks":                  nested(checksFields(&c.Checks)),
		"webhook":                 nested(webhookFields(&c.Webhook)),
		"waivers":                 waivers(&c.Waivers, true),
		// The older spelling: the same waivers, their reason optional.
		"exemptions":        waivers(&c.Waivers, false),
		"acceptDataLoss":    acceptances(&c.AcceptDataLoss),
		"annotationWaivers": annotationWaivers(&c.AnnotationWaivers),
	}
}

func webhookFields(w *WebhookSettings) fields {
	return fields{
		"revealStoredValues": boolean(&w.RevealStoredValues),
		"conversion": nested(fields{
			"maxObjects": positiveInt(&w.Conversion.MaxObjects),
			"timeout":    positiveDuration(&w.Conversion.Timeout),
		}),
	}
}

func checksFields(c *Checks) fields {
	versions := fields{
		"sameVersion":   nested(versionFields(&c.SameVersion)),
		"servedVersion": nested(servedVersionFields(&c.ServedVersion)),
	}
	fs := fields{
		"crd": nested(crdFields(&c.CRD)),
		// The documented alias: crd-diff's configuration nests the pair
		// checks under checks.versions.
		"versions": alias(versions),
	}
	for k, f := range versions {
		fs[k] = f
	}
	return fs
}

func toggle(t *Toggle) fieldFunc {
	return nested(fields{"enabled": boolean(&t.Enabled)})
}

func crdFields(c *CRDChecks) fields {
	return fields{
		CheckScope:                toggle(&c.Scope),
		CheckStoredVersionRemoval: toggle(&c.StoredVersionRemoval),
		CheckServedVersionRemoval: nested(fields{
			"enabled":             boolean(&c.ServedVersionRemoval.Enabled),
			"unservedEnforcement": choice(&c.ServedVersionRemoval.UnservedEnforcement, strictWarnNone),
		}),
		CheckExistingFieldRemoval: toggle(&c.ExistingFieldRemoval),
		CheckSubresources:         toggle(&c.Subresources),
		CheckSelectableFields:     toggle(&c.SelectableFields),
		CheckExistingResources:    toggle(&c.ExistingResources),
		CheckCRDDeletion:          toggle(&c.CRDDeletion),
		CheckAPIServerRejects:     toggle(&c.ApiserverRejects),
		CheckManagedFields: nested(fields{
			"enabled":             boolean(&c.ManagedFields.Enabled),
			"unservedEnforcement": choice(&c.ManagedFields.UnservedEnforcement, strictWarnNone),
		}),
		CheckOwnerReferences:    toggle(&c.OwnerReferences),
		CheckConversionOrdering: toggle(&c.ConversionOrdering),
		CheckConversionWebhook: nested(fields{
			"enabled":               boolean(&c.ConversionWebhook.Enabled),
			"annotationEnforcement": choice(&c.ConversionWebhook.AnnotationEnforcement, strictWarnNone),
		}),
		CheckVersionLifecycle: nested(fields{
			"enabled":                  boolean(&c.VersionLifecycle.Enabled),
			"notDeprecatedEnforcement": choice(&c.VersionLifecycle.NotDeprecatedEnforcement, strictWarnNone),
		}),
		CheckStoragePruning: nested(fields{
			"enabled":                    boolean(&c.StoragePruning.Enabled),
			"readModifyWriteEnforcement": choice(&c.StoragePruning.ReadModifyWriteEnforcement, strictWarnNone),
		}),
	}
}

func maxCheck(c *MaxCheck) fieldFunc {
	return nested(fields{
		"enabled":             boolean(&c.Enabled),
		"additionEnforcement": choice(&c.AdditionEnforcement, strictWarnNone),
		"decreaseEnforcement": choice(&c.DecreaseEnforcement, strictWarnNone),
	})
}

func minCheck(c *MinCheck) fieldFunc {
	return nested(fields{
		"enabled":             boolean(&c.Enabled),
		"additionEnforcement": choice(&c.AdditionEnforcement, strictWarnNone),
		"increaseEnforcement": choice(&c.IncreaseEnforcement, strictWarnNone),
	})
}

func versionFields(v *VersionChecks) fields {
	fs := fields{
		"enabled":              boolean(&v.Enabled),
		"unhandledFailureMode": choice(&v.UnhandledFailureMode, failModes),
		CheckEnum: nested(fields{
			"enabled":             boolean(&v.Enum.Enabled),
			"additionEnforcement": choice(&v.Enum.AdditionEnforcement, enumAdditionEnf),
			"removalEnforcement":  choice(&v.Enum.RemovalEnforcement, strictWarnNone),
		}),
		CheckDefault: nested(fields{
			"enabled":             boolean(&v.Default.Enabled),
			"changeEnforcement":   choice(&v.Default.ChangeEnforcement, strictWarnNone),
			"removalEnforcement":  choice(&v.Default.RemovalEnforcement, strictWarnNone),
			"additionEnforcement": choice(&v.Default.AdditionEnforcement, strictWarnNone),
		}),
		CheckRequired: nested(fields{
			"enabled":        boolean(&v.Required.Enabled),
			"newEnforcement": choice(&v.Required.NewEnforcement, strictWarnNone),
		}),
		CheckType: nested(fields{
			"enabled":           boolean(&v.Type.Enabled),
			"changeEnforcement": choice(&v.Type.ChangeEnforcement, strictWarnNone),
		}),
		CheckMaximum:       maxCheck(&v.Maximum),
		CheckMaxLength:     maxCheck(&v.MaxLength),
		CheckMaxItems:      maxCheck(&v.MaxItems),
		CheckMaxProperties: maxCheck(&v.MaxProperties),
		CheckMinimum:       minCheck(&v.Minimum),
		CheckMinLength:     minCheck(&v.MinLength),
		CheckMinItems:      minCheck(&v.MinItems),
		CheckMinProperties: minCheck(&v.MinProperties),
		CheckListType: nested(fields{
			"enabled":               boolean(&v.ListType.Enabled),
			"uniquenessEnforcement": choice(&v.ListType.UniquenessEnforcement, strictWarnNone),
			"coarseningEnforcement": choice(&v.ListType.CoarseningEnforcement, strictWarnNone),
		}),
		CheckMapType: nested(fields{
			"enabled":           boolean(&v.MapType.Enabled),
			"changeEnforcement": choice(&v.MapType.ChangeEnforcement, strictWarnNone),
		}),
	}
	// Every other property check is an on/off switch kept in Toggles.
	for _, id := range PropertyCheckIDs {
		if _, ok := fs[id]; ok {
			continue
		}
		fs[id] = nested(fields{"enabled": leaf(parseBool, func(b bool) {
			if v.Toggles == nil {
				v.Toggles = map[string]bool{}
			}
			v.Toggles[id] = b
		})})
	}
	return fs
}

func servedVersionFields(s *ServedVersionChecks) fields {
	fs := versionFields(&s.VersionChecks)
	fs["ignoreConversion"] = boolean(&s.IgnoreConversion)
	return fs
}

// exemptableCheckIDs are the check IDs a waiver may name: every one but
// apiserverRejects (the apiserver refuses the change whatever the config
// says) and staleWaiver (a waiver about waivers would only hide them).
func exemptableCheckIDs() []string {
	var ids []string
	for _, id := range AllCheckIDs() {
		if id != CheckAPIServerRejects && id != CheckStaleWaiver {
			ids = append(ids, id)
		}
	}
	return ids
}

// parseWaivableCheck parses a check ID that a waiver, an acceptance or
// annotationWaivers may name: one of exemptableCheckIDs.
func parseWaivableCheck(d *decoder, l loc, v any) (string, bool) {
	id, ok := parseString(d, l, v)
	switch {
	case !ok:
		return "", false
	case id == CheckAPIServerRejects:
		d.fail(l, ErrInvalidValue, "%s cannot be waived: the apiserver refuses the change whatever the config says "+
			"(to stop checking, set checks.crd.%s.enabled: false)", id, id)
		return "", false
	case !slices.Contains(exemptableCheckIDs(), id):
		d.fail(l, ErrInvalidValue, "unknown check ID %q (allowed: %s)", id, strings.Join(exemptableCheckIDs(), ", "))
		return "", false
	}
	return id, true
}

// waivableChecks decodes a list of waivable check IDs (parseWaivableCheck)
// into p, in the order given.
func waivableChecks(p *[]string) fieldFunc {
	return func(d *decoder, l loc, v any) {
		d.list(l, v, func(d *decoder, l loc, v any) {
			if id, ok := parseWaivableCheck(d, l, v); ok {
				*p = append(*p, id)
			}
		})
	}
}

// waivers decodes a list of waivers (the key waivers, or its older
// spelling exemptions, where the reason may be left out) into p.
func waivers(p *[]Waiver, reasonRequired bool) fieldFunc {
	return func(d *decoder, l loc, v any) {
		d.list(l, v, func(d *decoder, l loc, v any) {
			m, ok := asMap(v)
			if !ok {
				d.fail(l, ErrInvalidType, "must be a map, got %s", typeName(v))
				return
			}
			w := Waiver{Source: SourceSettings}
			before := len(d.errs)
			crdOK := false
			d.object(l, m, fields{
				"crd": leaf(parseString, func(s string) {
					w.CRD, crdOK = s, true
				}),
				"fingerprint": leaf(parseFingerprint, func(s string) { w.Fingerprint = s }),
				"path":        schemaPath(&w.Path, "^.spec.size; * matches any characters: ^.spec.*"),
				"reason":      str(&w.Reason),
				"owner":       str(&w.Owner),
				"expires":     date(&w.Expires),
				"checks":      waivableChecks(&w.Checks),
			})
			switch {
			case m["crd"] == nil && m["fingerprint"] == nil:
				d.fail(l.key("crd"), ErrMissingKey, "required (unless fingerprint is given): the CRD's metadata.name, e.g. widgets.example.com")
			case m["crd"] != nil && crdOK && strings.TrimSpace(w.CRD) == "":
				d.fail(l.key("crd"), ErrInvalidValue, "must not be empty: the CRD's metadata.name, e.g. widgets.example.com")
			}
			if r, isStr := m["reason"].(string); reasonRequired && (m["reason"] == nil || isStr && strings.TrimSpace(r) == "") {
				d.fail(l.key("reason"), ErrMissingKey, "required: say why the findings are acceptable (a review, a migration)")
			}
			if len(d.errs) == before {
				w.Reason = strings.TrimSpace(w.Reason)
				*p = append(*p, w)
			}
		})
	}
}

// parseFingerprint decodes a waiver's fingerprint: a string of
// FingerprintLen lowercase hex digits. A fingerprint written unquoted
// that is all digits (123456789012), or digits and one e (94583743e021),
// reaches Decode as a number: YAML read it so. Its text cannot be
// recovered from the number (e-notation, leading zeros, octal), so it is
// an error that says to quote it. (ParseFile, which has the YAML text,
// restores such fingerprints before Decode sees them.)
func parseFingerprint(d *decoder, l loc, v any) (string, bool) {
	if _, isNum, _ := toInt(v); isNum {
		d.fail(l, ErrInvalidType, "must be a string, got a number: YAML reads a fingerprint written unquoted as a number when it is all digits or digits and one e (123456789012, 94583743e021), and its digits cannot be recovered from the number; quote it: fingerprint: \"94583743e021\"")
		return "", false
	}
	s, ok := parseString(d, l, v)
	if ok && !ValidFingerprint(s) {
		d.fail(l, ErrInvalidValue, "%q is not a fingerprint: %d lowercase hex digits, as outputs print it ([fp:1a2b3c4d5e6f], JSON fingerprint)", s, FingerprintLen)
		return "", false
	}
	return s, ok
}

// Value helpers.

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any: // gopkg.in/yaml.v2 style
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[fmt.Sprint(k)] = x
		}
		return out, true
	}
	return nil, false
}

func asList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, true
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, true
	case []map[string]any:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

// toInt converts a number of any Go numeric type (YAML decoders give int,
// int64, uint64 or float64). isNum reports whether v is a number at all, ok
// whether it is integral and fits an int.
func toInt(v any) (n int, isNum, ok bool) {
	switch x := v.(type) {
	case int:
		return x, true, true
	case int8:
		return int(x), true, true
	case int16:
		return int(x), true, true
	case int32:
		return int(x), true, true
	case int64:
		return int(x), true, int64(int(x)) == x
	case uint:
		return int(x), true, x <= math.MaxInt
	case uint8:
		return int(x), true, true
	case uint16:
		return int(x), true, true
	case uint32:
		return int(x), true, uint64(x) <= math.MaxInt
	case uint64:
		return int(x), true, x <= math.MaxInt
	case float32:
		return floatToInt(float64(x))
	case float64:
		return floatToInt(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return toInt(i)
		}
		if f, err := x.Float64(); err == nil {
			return floatToInt(f)
		}
		return 0, true, false
	}
	return 0, false, false
}

func floatToInt(f float64) (int, bool, bool) {
	if f != math.Trunc(f) || f < math.MinInt || f >= math.MaxInt {
		return 0, true, false
	}
	return int(f), true, true
}

// typeName names the YAML type of a decoded value for messages. Integral
// numbers are "int" whichever Go type the YAML decoder chose.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	}
	if _, ok := asMap(v); ok {
		return "map"
	}
	if _, ok := asList(v); ok {
		return "list"
	}
	if _, isNum, ok := toInt(v); isNum {
		if ok {
			return "int"
		}
		return "float"
	}
	return fmt.Sprintf("%T", v)
}

// pathLess orders key paths with list indices compared as numbers, so
// exemptions[2] sorts before exemptions[10].
func pathLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		if da && db {
			na, ra := digits(a)
			nb, rb := digits(b)
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digits(s string) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return strings.TrimLeft(s[:i], "0"), s[i:]
}

// Waivable reports whether a waiver, an acceptance or annotationWaivers may
// name the check id (exemptableCheckIDs): the one list of waivable checks,
// which the engine's check descriptors read (finding.Descriptor.Waivable).
func Waivable(id string) bool { return slices.Contains(exemptableCheckIDs(), id) }
