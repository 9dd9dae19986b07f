package config

import (
	"encoding/json"
	"strings"
)

// FindingFacts is what a FindingCause cause carries of its finding in the
// cause's field, as compact JSON with short keys: the finding's
// fingerprint, its check, its version (and pair version) and its schema
// path or CRD field. The CRD is the status details' name (one CRD per
// review). Every cause carries them, so that every finding of a denial can
// be named and matched by facts; the cause's message, the finding's line,
// is there for the first 20 only (docs/webhook.md).
type FindingFacts struct {
	Fingerprint string `json:"fp"`
	Check       string `json:"check,omitempty"`
	Version     string `json:"version,omitempty"`
	PairVersion string `json:"pair,omitempty"`
	Field       string `json:"field,omitempty"`
}

// CauseField renders the facts for a FindingCause cause's field.
func (f FindingFacts) CauseField() string {
	b, err := json.Marshal(f)
	if err != nil { // strings only: never
		return f.Fingerprint
	}
	return string(b)
}

// ParseFindingFacts reads the field of a FindingCause cause
// (CauseField). A field that is not a JSON object is a fingerprint alone,
// as webhooks before the facts sent it.
func ParseFindingFacts(field string) FindingFacts {
	if strings.HasPrefix(field, "{") {
		var f FindingFacts
		if json.Unmarshal([]byte(field), &f) == nil {
			return f
		}
	}
	return FindingFacts{Fingerprint: field}
}
