package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Waiver is a reviewed bypass: the one waiver concept of the check. It
// waives the findings it matches (they become warnings that say so) until
// the end of its Expires day (UTC). It comes from three places and means
// the same in each: the `waivers` key of the settings (a kapp Config's
// preflightRules, the KAPP_CRD_UPGRADE_SAFETY_CONFIG file, the webhook's
// --config), their older spelling `exemptions`, and the waiver annotations
// of a CRD (WaiversOf).
//
// A waiver names either a finding's Fingerprint (optionally with its CRD),
// or a CRD with optional Checks and a Path pattern. Matches is the one
// matcher.
type Waiver struct {
	// Fingerprint is a finding's fingerprint (FingerprintLen hex digits);
	// "" when the waiver names a CRD, checks and a path instead.
	Fingerprint string
	// CRD is the CRD's metadata.name, e.g. widgets.example.com. Required
	// without a fingerprint; with one, it limits the waiver to that CRD,
	// and lets a run that evaluates the CRD report the waiver as stale.
	CRD string
	// Checks limits the waiver to these check IDs; empty means all.
	Checks []string
	// Path is a pattern of schema paths (^.spec.size, ^.spec.*): `*`
	// matches any run of characters, every other character itself; "" matches
	// every finding, CRD- and version-level ones included.
	Path string
	// Reason says why the findings are acceptable; required (but for the
	// older exemptions key, where it was optional).
	Reason string
	// Expires is the last day the waiver applies (00:00 UTC of that day);
	// the zero value never expires.
	Expires time.Time
	// Owner is who answers for the waiver (a team, a person); optional.
	Owner string
	// Source is where the waiver was given: SourceSettings or
	// SourceAnnotation (what outputs name).
	Source WaiverSource
	// CarriedOver: a waiver annotation that the old CRD already had, with
	// the same value (evaluation marks it): it was reviewed with an
	// earlier change and waives nothing in this one
	// (RefusedCarriedOver).
	CarriedOver bool
}

// WaiverSource is where a waiver was given.
type WaiverSource string

const (
	// SourceSettings: the waivers (or exemptions) key of the settings.
	SourceSettings WaiverSource = "settings"
	// SourceAnnotation: the waiver annotations of the CRD.
	SourceAnnotation WaiverSource = "annotation"
)

// FingerprintLen is how many hex digits a finding's fingerprint has.
const FingerprintLen = 12

// DateFormat is the form of a waiver's expiry date.
const DateFormat = "2006-01-02"

// ValidFingerprint tells whether s has the form of a fingerprint:
// FingerprintLen lowercase hex digits.
func ValidFingerprint(s string) bool {
	if len(s) != FingerprintLen {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// WaiverSubject is what a waiver is matched against: the facts of one
// finding.
type WaiverSubject struct {
	CRD, Check, Path, Fingerprint string
}

// Matches tells whether w names the finding s, whatever its expiry.
func (w *Waiver) Matches(s WaiverSubject) bool {
	switch {
	case w.Fingerprint != "" && w.Fingerprint != s.Fingerprint:
		return false
	case w.CRD != "" && w.CRD != s.CRD, w.CRD == "" && w.Fingerprint == "":
		return false
	case len(w.Checks) > 0 && !slices.Contains(w.Checks, s.Check):
		return false
	}
	return w.Path == "" || matchPattern(w.Path, s.Path)
}

// ExpiredAt tells whether the waiver no longer applies at now: from the
// end of its Expires day, UTC, on.
func (w *Waiver) ExpiredAt(now time.Time) bool {
	return !w.Expires.IsZero() && !now.Before(w.Expires.AddDate(0, 0, 1))
}

// ExpiresText is the expiry date as written ("2026-12-31"), "" for none.
func (w *Waiver) ExpiresText() string {
	if w.Expires.IsZero() {
		return ""
	}
	return w.Expires.Format(DateFormat)
}

// Clock is the time waivers are judged at: c.Now, or the current time.
func (c *Settings) Clock() time.Time {
	if c.Now.IsZero() {
		return time.Now()
	}
	return c.Now
}

// Waive returns the waiver that waives the finding s: the first one that
// matches and has not expired. When only expired ones match, it returns
// the first of them with expired true: the finding is not waived, and says
// so. nil when none matches.
func (c *Settings) Waive(s WaiverSubject) (w *Waiver, expired bool) {
	now := c.Clock()
	var first *Waiver
	for i := range c.Waivers {
		w := &c.Waivers[i]
		if !w.Matches(s) {
			continue
		}
		if !w.ExpiredAt(now) {
			return w, false
		}
		if first == nil {
			first = w
		}
	}
	return first, first != nil
}

// matchPattern matches s against a pattern in which `*` stands for any run
// of characters (none included) and every other character for itself.
func matchPattern(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// The waiver annotations: a reviewed bypass that travels with the change.
// Set on the new CRD (for a deletion: on the CRD being deleted), they waive
// findings of that CRD as the settings' waivers do:
//
//	metadata:
//	  annotations:
//	    crd-upgrade-safety.kapp.k14s.io/waive: "enum,required"
//	    crd-upgrade-safety.kapp.k14s.io/waive-fingerprints: "1a2b3c4d5e6f"
//	    crd-upgrade-safety.kapp.k14s.io/waive-reason: "values renamed, migration in PR 123"
//	    crd-upgrade-safety.kapp.k14s.io/waive-expires: "2026-12-31"
//	    crd-upgrade-safety.kapp.k14s.io/waive-owner: "team-widgets"
//
// The kapp preflight, the tools command and the admission webhook read them
// the same way (evaluation.Evaluate, through WithWaivers).
const (
	// WaivePrefix is the prefix of every annotation of the check.
	WaivePrefix = "crd-upgrade-safety.kapp.k14s.io/"
	// WaiveAnnotation names the waived check IDs, separated by commas.
	WaiveAnnotation = WaivePrefix + "waive"
	// WaiveFingerprintsAnnotation names waived findings by fingerprint,
	// separated by commas.
	WaiveFingerprintsAnnotation = WaivePrefix + "waive-fingerprints"
	// WaiveReasonAnnotation is the reason, required with either of the
	// two above.
	WaiveReasonAnnotation = WaivePrefix + "waive-reason"
	// WaiveExpiresAnnotation is the last day the waivers apply (YYYY-MM-DD, UTC).
	WaiveExpiresAnnotation = WaivePrefix + "waive-expires"
	// WaiveOwnerAnnotation is who answers for the waivers.
	WaiveOwnerAnnotation = WaivePrefix + "waive-owner"
)

var waiveAnnotations = []string{WaiveAnnotation, WaiveExpiresAnnotation, WaiveFingerprintsAnnotation, WaiveOwnerAnnotation, WaiveReasonAnnotation}

// ErrInvalidWaiver is wrapped by the error of a CRD whose waiver
// annotations are invalid. It is an error, not a finding: the run fails
// (and the webhook denies) whatever the mode, until the annotation is
// fixed.
var ErrInvalidWaiver = errors.New("invalid waiver annotation")

// WaiversOf returns the waivers that the annotations of the CRD named crd
// ask for: one for the check IDs of WaiveAnnotation, one per fingerprint
// of WaiveFingerprintsAnnotation; nil when they ask for none. Strict, as
// the settings are: at least one check or fingerprint, every check an
// exemptable check ID (apiserverRejects is not: the apiserver refuses the
// change whatever the annotation says), every fingerprint well formed, the
// reason given and not blank, the expiry a date, and no other annotation
// with the prefix (a misspelt key would otherwise waive nothing, silently).
func WaiversOf(crd string, annotations map[string]string) ([]Waiver, error) {
	fail := func(format string, args ...any) ([]Waiver, error) {
		return nil, fmt.Errorf("CRD %s: %w: "+format, append([]any{crd, ErrInvalidWaiver}, args...)...)
	}
	for _, k := range sortedKeys(annotations) {
		if strings.HasPrefix(k, WaivePrefix) && !slices.Contains(waiveAnnotations, k) {
			return fail("unknown annotation %s (allowed: %s)", k, strings.Join(waiveAnnotations, ", "))
		}
	}
	checks, hasWaive := annotations[WaiveAnnotation]
	fps, hasFPs := annotations[WaiveFingerprintsAnnotation]
	reason, hasReason := annotations[WaiveReasonAnnotation]
	expires, hasExpires := annotations[WaiveExpiresAnnotation]
	owner, hasOwner := annotations[WaiveOwnerAnnotation]
	switch {
	case !hasWaive && !hasFPs && !hasReason && !hasExpires && !hasOwner:
		return nil, nil
	case !hasWaive && !hasFPs:
		return fail("%s without %s or %s: name the check IDs or the fingerprints to waive",
			firstOf(annotations, WaiveReasonAnnotation, WaiveExpiresAnnotation, WaiveOwnerAnnotation), WaiveAnnotation, WaiveFingerprintsAnnotation)
	case strings.TrimSpace(reason) == "":
		return fail("%s requires %s: say why the findings are acceptable (a review, a migration)",
			firstOf(annotations, WaiveAnnotation, WaiveFingerprintsAnnotation), WaiveReasonAnnotation)
	}
	base := Waiver{CRD: crd, Reason: strings.TrimSpace(reason), Owner: strings.TrimSpace(owner), Source: SourceAnnotation}
	if hasExpires {
		t, err := parseDate(strings.TrimSpace(expires))
		if err != nil {
			return fail("%s: %w", WaiveExpiresAnnotation, err)
		}
		base.Expires = t
	}
	var out []Waiver
	if hasWaive {
		w := base
		known := exemptableCheckIDs()
		for _, id := range strings.Split(checks, ",") {
			id = strings.TrimSpace(id)
			switch {
			case id == "":
				continue
			case id == CheckAPIServerRejects:
				return fail("%s cannot be waived: the apiserver refuses the change whatever the annotation says", id)
			case !slices.Contains(known, id):
				return fail("%s: unknown check ID %q (allowed: %s)", WaiveAnnotation, id, strings.Join(known, ", "))
			case !slices.Contains(w.Checks, id):
				w.Checks = append(w.Checks, id)
			}
		}
		if len(w.Checks) == 0 {
			return fail("%s names no check: list the check IDs to waive, separated by commas (waiving every check at once is not possible)", WaiveAnnotation)
		}
		out = append(out, w)
	}
	if hasFPs {
		n := len(out)
		for _, fp := range strings.Split(fps, ",") {
			fp = strings.TrimSpace(fp)
			switch {
			case fp == "":
				continue
			case !ValidFingerprint(fp):
				return fail("%s: %q is not a fingerprint (%d hex digits, as outputs print it: [fp:1a2b3c4d5e6f])", WaiveFingerprintsAnnotation, fp, FingerprintLen)
			case !slices.ContainsFunc(out[n:], func(w Waiver) bool { return w.Fingerprint == fp }):
				w := base
				w.Fingerprint = fp
				out = append(out, w)
			}
		}
		if len(out) == n {
			return fail("%s names no fingerprint: list them separated by commas", WaiveFingerprintsAnnotation)
		}
	}
	return out, nil
}

// SameWaiverAnnotations tells whether two CRDs' annotations hold the same
// waiver annotations (every annotation with WaivePrefix), each with the
// same value: an update that leaves them so adds or changes no waiver.
// (Neither holding any is the same too: there is nothing to carry over.)
func SameWaiverAnnotations(old, new map[string]string) bool {
	n := 0
	for k, v := range new {
		if !strings.HasPrefix(k, WaivePrefix) {
			continue
		}
		if ov, ok := old[k]; !ok || ov != v {
			return false
		}
		n++
	}
	for k := range old {
		if strings.HasPrefix(k, WaivePrefix) {
			n--
		}
	}
	return n == 0
}

// firstOf returns the first of keys that m holds.
func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return k
		}
	}
	return keys[0]
}

// parseDate parses an expiry date, YYYY-MM-DD (a day, UTC).
func parseDate(s string) (time.Time, error) {
	t, err := time.Parse(DateFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid date %q: must be YYYY-MM-DD, the last day the waiver applies (UTC)", s)
	}
	return t, nil
}

// WithWaivers returns c with the waivers added; c itself, and its
// Waivers, are left as they are. Without waivers it returns c.
func (c *Settings) WithWaivers(waivers []Waiver) *Settings {
	if len(waivers) == 0 {
		return c
	}
	out := *c
	out.Waivers = append(slices.Clip(c.Waivers), waivers...)
	return &out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
