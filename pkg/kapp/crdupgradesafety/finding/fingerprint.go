package finding

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Change is what a finding's change is, as facts rather than words: Kind
// tells apart the findings one check can make at one place ("added",
// "decreased", "removed"), Old and New are the values before and after
// (canonical JSON, or a name; "" for none). The check that makes the
// finding sets it; its fingerprint hashes it.
type Change struct {
	Kind string
	Old  string
	New  string
}

// fingerprintVersion starts what is hashed: a change of what goes into a
// fingerprint changes this, and so every fingerprint.
const fingerprintVersion = "crdUpgradeSafety/v1"

// fingerprint is the finding's stable identity: a SHA-256, cut to
// config.FingerprintLen hex digits, of the facts the finding is about: the CRD,
// the version (and pair), the schema path or CRD field, the check, the
// change (Change), and for a finding about a stored object or standing for
// another change, that object or change. Never of its text, severity,
// impact, remedy, file, line or position in the output: a finding keeps
// its fingerprint through reformatting, file moves, reordering and
// rewording, and a waiver by fingerprint keeps applying to it. ordinal
// tells apart findings whose facts are all alike (the policy counts them;
// 0 for the first).
func Fingerprint(f *Finding, ordinal int) string {
	parts := []string{fingerprintVersion, f.CRD, f.Version, f.PairVersion, f.Field.String(), f.CRDField, f.Check,
		f.Change.Kind, f.Change.Old, f.Change.New}
	if f.Object != nil {
		parts = append(parts, "object", f.Object.Source, f.Object.Name, string(f.Object.Effect), strconv.FormatBool(f.Object.AlreadyInvalid))
	}
	if f.Cause != nil {
		parts = append(parts, "cause", f.Cause.Check, f.Cause.Field.String(), f.Cause.Fingerprint)
	}
	if ordinal > 0 {
		parts = append(parts, "ordinal", strconv.Itoa(ordinal))
	}
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:config.FingerprintLen]
}

// factJSON renders a value as compact JSON for a Change (strings quoted,
// lists in the order given): a fact, not words.
func FactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// factList renders canonical JSON values (enum values) as a JSON list,
// sorted: reordering a list that means a set changes no fact.
func FactList(values []string) string {
	return "[" + strings.Join(slices.Sorted(slices.Values(values)), ",") + "]"
}

// factSet renders names (list map keys) as a sorted JSON list.
func FactSet(names []string) string {
	return FactJSON(slices.Sorted(slices.Values(names)))
}

// factValue renders a schema value (a default) as canonical JSON, "" for
// none.
func FactValue(v *apiextv1.JSON) string {
	if v == nil {
		return ""
	}
	return CanonicalJSON(v.Raw)
}

// factSchema renders a schema (a combinator branch, a map's value schema)
// as JSON for a Change: the whole content of what a check judged, so that
// another branch or value schema at the same place is another change; ""
// for none.
func FactSchema(s *apiextv1.JSONSchemaProps) string {
	if s == nil {
		return ""
	}
	return FactJSON(s)
}

// factSchemas renders a list of schemas (a combinator's branches) as JSON.
func FactSchemas(s []apiextv1.JSONSchemaProps) string {
	return FactJSON(s)
}
