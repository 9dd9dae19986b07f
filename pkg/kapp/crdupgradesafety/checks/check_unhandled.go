package checks

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The descriptor of unhandled: a change no check understands (walk runs it last).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckUnhandled}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyReview})

// checkUnhandled runs last: every keyword a check understood has been
// cleared from both sides, so any difference left is a change no check
// knows to be safe. failMode decides (config.FailUnhandledChange, resolved
// once per pair): under closed it is an error finding, under open it is
// not reported.
func checkUnhandled(n *node) {
	if n.run.unhandled == config.FailIgnore || residualUnset(&n.old) && residualUnset(&n.new) {
		return
	}
	ov, nv := reflect.ValueOf(&n.old).Elem(), reflect.ValueOf(&n.new).Elem()
	for i := 0; i < ov.NumField(); i++ {
		of, nf := ov.Field(i).Interface(), nv.Field(i).Interface()
		if reflect.DeepEqual(of, nf) {
			continue
		}
		n.report(config.CheckUnhandled, finding.Change{Kind: jsonName(schemaFields[i]), Old: finding.FactJSON(of), New: finding.FactJSON(nf)}, "unable to determine if the change to %s is safe: %s -> %s",
			jsonName(schemaFields[i]), renderAny(ov.Field(i)), renderAny(nv.Field(i)))
	}
}

var schemaFields = reflect.VisibleFields(reflect.TypeOf(apiextv1.JSONSchemaProps{}))

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// renderAny renders a keyword's value as compact JSON, "(none)" when unset.
func renderAny(v reflect.Value) string {
	if v.IsZero() {
		return "(none)"
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return "(unprintable)"
	}
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// residualUnset is the fast path of checkUnhandled: it reports whether none
// of the keywords that no check clears is set. Every other keyword has been
// cleared by the checks before (TestResidualKeywords keeps this list exact
// as JSONSchemaProps grows).
func residualUnset(s *apiextv1.JSONSchemaProps) bool {
	return s.ID == "" && s.Schema == "" && s.Ref == nil && s.Items == nil &&
		s.PatternProperties == nil && s.Dependencies == nil && s.AdditionalItems == nil &&
		s.Definitions == nil
}
