package checks

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of format: a format added or changed; before type: it reads the types (numeric formats).
var _ = propertyCheckOf(20, finding.Register(finding.Descriptor{IDs: []string{config.CheckFormat}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkFormat)

// checkFormat: a format added or changed is unsafe only when the
// apiserver validates the new format and its values are not certainly all
// valid under the old one. The apiserver validates only the formats it
// supports (apiextensions' supported formats, checked by
// k8s.io/kube-openapi's strfmt validators) and ignores every other format;
// names are compared as it normalizes them (without dashes: date-time is
// datetime). Removing a format relaxes, and so does changing a validated
// format to one the apiserver does not recognize (or to password): every
// string passes then (TestFormatRelaxedToUnrecognizedAgreesWithAPIServer).
// Formats on other types than string are dropped by the apiserver unless
// numeric, and cleared before this check (clearIgnoredKeywords). The
// numeric formats are judged by the Kubernetes version (checkNumericFormat).
// It runs before checkType, which clears the types it reads.
func checkFormat(n *node) {
	ot, nt := n.old.Type, n.new.Type
	o, nw, ok := takeString(n, config.CheckFormat, &n.old.Format, &n.new.Format)
	if !ok {
		return
	}
	if nt == "integer" || nt == "number" {
		checkNumericFormat(n, ot, o, nt, nw)
		return
	}
	if formatIncludes(o, nw) {
		return
	}
	note := ""
	if o != "" && !validatedFormats[NormalizeFormat(o)] {
		note = " (the old format is not validated by the apiserver)"
	}
	n.report(config.CheckFormat, finding.Change{Kind: addedOrChanged(o), Old: o, New: nw}, "format %s: %s -> %s%s", addedOrChanged(o), finding.RenderString(o), finding.RenderString(nw), note)
}

// checkNumericFormat judges a numeric format (the only formats the
// apiserver keeps on integer and number) as the target version's
// validation does. Kubernetes 1.37's kube-openapi number validator checks
// that a value fits its type and format (IsValueValidAgainstRange): an
// integer the int64 range whatever its format, under int32 the int32
// range; a number, under float, float32's range (|x| <= 3.4e38), under
// double or none nothing that decoding has not already checked. 1.35's
// validator passes it neither type nor format and checks no range. So from
// 1.37 on, int32 added or changed to on an integer, and float on a number,
// may reject stored values; int64 and double add no bound
// (TestNumericFormatsAgreeWithAPIServer proves each pair at both versions).
func checkNumericFormat(n *node, oldType, old, newType, new string) {
	if !n.run.kubeVersion.AtLeast(config.KubeVersionEnforcingNumericFormats) {
		return
	}
	nr := numericRange(newType, new)
	if nr == nil || numericRangeIncludes(numericRange(oldType, old), nr) {
		return
	}
	n.emit(finding.Draft{Field: n.path, Level: config.EnforcementStrict, Check: config.CheckFormat,
		Fact: finding.Change{Kind: "numericRange", Old: oldType + "/" + old, New: newType + "/" + new},
		Message: fmt.Sprintf("format %s: %s -> %s (values beyond %s are rejected)",
			addedOrChanged(old), finding.RenderString(old), finding.RenderString(new), nr.text),
		Since: config.KubeVersionEnforcingNumericFormats})
}

// numericBound is the range a numeric format holds values to.
type numericBound struct {
	max  float64 // largest magnitude
	text string
}

var (
	int32Bound   = &numericBound{max: math.MaxInt32, text: "the int32 range -2147483648..2147483647"}
	float32Bound = &numericBound{max: math.MaxFloat32, text: "float32's range (±3.4028235e+38)"}
)

// numericRange is the range that a format narrower than its type's own
// holds values to (nil: none narrower than the type's).
func numericRange(typ, format string) *numericBound {
	switch {
	case typ == "integer" && format == "int32":
		return int32Bound
	case typ == "number" && format == "float":
		return float32Bound
	}
	return nil
}

// numericRangeIncludes reports whether every value within old (nil: no
// narrower range) is within new.
func numericRangeIncludes(old, new *numericBound) bool {
	return old != nil && old.max <= new.max
}

// validatedFormats are the formats (normalized) whose values the
// apiserver checks: apiextensions-apiserver's supported formats (since
// Kubernetes 1.0, and k8s-short-name and k8s-long-name since 1.34, counted
// as validated whatever the cluster's version), except password, whose
// validator accepts every string. TestValidatedFormats checks this list
// against the apiserver's schema validator.
var validatedFormats = map[string]bool{
	"bsonobjectid": true, "uri": true, "email": true, "hostname": true, "ipv4": true, "ipv6": true,
	"cidr": true, "mac": true, "uuid": true, "uuid3": true, "uuid4": true, "uuid5": true,
	"isbn": true, "isbn10": true, "isbn13": true, "creditcard": true, "ssn": true,
	"hexcolor": true, "rgbcolor": true, "byte": true, "date": true, "duration": true,
	"datetime": true, "k8sshortname": true, "k8slongname": true,
}

// formatSupersets maps a validated format to the formats that certainly
// accept every value it accepts (TestFormatSupersets proves each pair with
// the strfmt validators): the uuid versions are uuids with fixed digits,
// isbn is isbn10 or isbn13, a short name is a one-segment long name.
var formatSupersets = map[string][]string{
	"uuid3": {"uuid"}, "uuid4": {"uuid"}, "uuid5": {"uuid"},
	"isbn10": {"isbn"}, "isbn13": {"isbn"},
	"k8sshortname": {"k8slongname"},
}

// normalizeFormat is go-openapi's format name normalization, which the
// apiserver uses too.
func NormalizeFormat(f string) string { return strings.ReplaceAll(f, "-", "") }

// formatIncludes reports whether every string valid under format old is
// valid under format new ("" is no format).
func formatIncludes(old, new string) bool {
	o, nw := NormalizeFormat(old), NormalizeFormat(new)
	switch {
	case !validatedFormats[nw]:
		return true // the new format validates nothing
	case !validatedFormats[o]:
		return false // it validated nothing, the new one does
	case o == nw:
		return true
	default:
		return slices.Contains(formatSupersets[o], nw)
	}
}
