package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The waiver annotations: a reviewed bypass that travels with the change.
// Set on the new CRD (for a deletion: on the CRD being deleted), they waive
// the findings of the named checks for that CRD, as an exemption of the
// settings would:
//
//	metadata:
//	  annotations:
//	    crd-upgrade-safety.kapp.k14s.io/waive: "enum,required"
//	    crd-upgrade-safety.kapp.k14s.io/waive-reason: "values renamed, migration in PR 123"
//
// The kapp preflight, the tools command and the admission webhook read them
// the same way (evaluation.Evaluate, through WithWaivers).
const (
	// WaivePrefix is the prefix of every annotation of the check.
	WaivePrefix = "crd-upgrade-safety.kapp.k14s.io/"
	// WaiveAnnotation names the waived check IDs, separated by commas.
	WaiveAnnotation = WaivePrefix + "waive"
	// WaiveReasonAnnotation is the reason, required with WaiveAnnotation.
	WaiveReasonAnnotation = WaivePrefix + "waive-reason"
)

// waiverReasonPrefix starts the reason of an exemption that comes from the
// annotations: findings then read "(exempted: waive annotation: ...)".
const waiverReasonPrefix = "waive annotation: "

// ErrInvalidWaiver is wrapped by the error of a CRD whose waiver
// annotations are invalid. It is an error, not a finding: the run fails
// (and the webhook denies) whatever the mode, until the annotation is
// fixed.
var ErrInvalidWaiver = errors.New("invalid waiver annotation")

// WaiverOf returns the exemption that the annotations of the CRD named crd
// ask for, nil when they ask for none. Strict, as the settings are: a
// waiver names at least one check, every name is an exemptable check ID
// (apiserverRejects is not: the apiserver refuses the change whatever the
// annotation says), the reason is given and not blank, and no other
// annotation uses the prefix (a misspelt key would otherwise waive
// nothing, silently).
func WaiverOf(crd string, annotations map[string]string) (*Exemption, error) {
	fail := func(format string, args ...any) (*Exemption, error) {
		return nil, fmt.Errorf("CRD %s: %w: "+format, append([]any{crd, ErrInvalidWaiver}, args...)...)
	}
	for _, k := range sortedKeys(annotations) {
		if strings.HasPrefix(k, WaivePrefix) && k != WaiveAnnotation && k != WaiveReasonAnnotation {
			return fail("unknown annotation %s (allowed: %s, %s)", k, WaiveAnnotation, WaiveReasonAnnotation)
		}
	}
	value, hasWaive := annotations[WaiveAnnotation]
	reason, hasReason := annotations[WaiveReasonAnnotation]
	switch {
	case !hasWaive && !hasReason:
		return nil, nil
	case !hasWaive:
		return fail("%s without %s: name the check IDs to waive", WaiveReasonAnnotation, WaiveAnnotation)
	case strings.TrimSpace(reason) == "":
		return fail("%s requires %s: say why the findings are acceptable (a review, a migration)", WaiveAnnotation, WaiveReasonAnnotation)
	}
	known := exemptableCheckIDs()
	e := &Exemption{CRD: crd, Reason: waiverReasonPrefix + strings.TrimSpace(reason)}
	for _, id := range strings.Split(value, ",") {
		id = strings.TrimSpace(id)
		switch {
		case id == "":
			continue
		case id == CheckAPIServerRejects:
			return fail("%s cannot be waived: the apiserver refuses the change whatever the annotation says", id)
		case !slices.Contains(known, id):
			return fail("%s: unknown check ID %q (allowed: %s)", WaiveAnnotation, id, strings.Join(known, ", "))
		case !slices.Contains(e.Checks, id):
			e.Checks = append(e.Checks, id)
		}
	}
	if len(e.Checks) == 0 {
		return fail("%s names no check: list the check IDs to waive, separated by commas (waiving every check at once is not possible)", WaiveAnnotation)
	}
	return e, nil
}

// WithWaivers returns c with the exemptions added; c itself, and its
// Exemptions, are left as they are. Without exemptions it returns c.
func (c *Settings) WithWaivers(waivers []Exemption) *Settings {
	if len(waivers) == 0 {
		return c
	}
	out := *c
	out.Exemptions = append(slices.Clip(c.Exemptions), waivers...)
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
