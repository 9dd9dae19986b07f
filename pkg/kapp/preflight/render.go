package preflight

import (
	"fmt"
	"sort"
	"strings"

	uitable "github.com/cppforlife/go-cli-ui/ui/table"
	"github.com/crdsafety/kapp/pkg/kapp/preflight/crdupgradesafety"
)

// This file is the one place that turns findings into text: the preflight
// check (warnings and its error) and `kapp tools crd-upgrade-safety` (the
// table and summary) both render through it.

// FindingLine renders one finding on one line, e.g.
//
//	crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5
//
// CRD-level findings leave out the version and field parts they lack.
func FindingLine(f crdupgradesafety.Finding) string {
	var b strings.Builder
	b.WriteString("crd ")
	b.WriteString(f.CRD)
	if f.Version != "" {
		b.WriteString(" version ")
		b.WriteString(f.Version)
	}
	if f.Field != "" {
		b.WriteString(" field ")
		b.WriteString(f.Field)
	}
	b.WriteString(": [")
	b.WriteString(f.Check)
	b.WriteString("] ")
	b.WriteString(f.Message)
	return b.String()
}

// OmittedLines renders the counts left out by crdupgradesafety.Bound, one
// line per CRD, sorted by CRD name.
func OmittedLines(omitted map[string]int) []string {
	names := make([]string, 0, len(omitted))
	for name, n := range omitted {
		if n > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	lines := make([]string, 0, len(names))
	for _, name := range names {
		lines = append(lines, fmt.Sprintf("... and %d more %s for CRD %s",
			omitted[name], plural(omitted[name], "finding", "findings"), name))
	}
	return lines
}

// Table keys double as the JSON keys of the rows under the global --json
// flag; they match the json tags of crdupgradesafety.Finding.
var findingsHeader = []uitable.Header{
	{Key: "crd", Title: "CRD"},
	{Key: "version", Title: "Version"},
	{Key: "field", Title: "Field"},
	{Key: "check", Title: "Check"},
	{Key: "severity", Title: "Severity"},
	{Key: "message", Title: "Message"},
}

// FindingsTable renders (already bounded) findings as a kapp table; the
// omitted counts become table notes.
func FindingsTable(findings []crdupgradesafety.Finding, omitted map[string]int) uitable.Table {
	table := uitable.Table{
		Title:   "CRD upgrade safety findings",
		Content: "findings",
		Header:  append([]uitable.Header(nil), findingsHeader...),
		// Sort on every column: go-cli-ui sorts rows with an unstable sort,
		// so a partial key could reorder rows between runs.
		SortBy: []uitable.ColumnSort{
			{Column: 0, Asc: true}, {Column: 1, Asc: true}, {Column: 2, Asc: true},
			{Column: 3, Asc: true}, {Column: 5, Asc: true}, {Column: 4, Asc: true},
		},
		FillFirstColumn: true,
		Notes:           OmittedLines(omitted),
	}
	for _, f := range findings {
		table.Rows = append(table.Rows, []uitable.Value{
			uitable.NewValueString(f.CRD),
			uitable.NewValueString(f.Version),
			uitable.NewValueString(f.Field),
			uitable.NewValueString(f.Check),
			uitable.ValueFmt{
				V:     uitable.NewValueString(string(f.Severity)),
				Error: f.Severity == crdupgradesafety.SeverityError,
			},
			uitable.NewValueString(f.Message),
		})
	}
	return table
}

// Summary renders the one-line outcome over all findings (not only the
// printed ones) of crds compared CRDs: "2 errors, 1 warning in 3 CRDs" or
// "No unsafe changes in 3 CRDs".
func Summary(findings []crdupgradesafety.Finding, crds int) string {
	crdsStr := fmt.Sprintf("%d %s", crds, plural(crds, "CRD", "CRDs"))
	if len(findings) == 0 {
		return "No unsafe changes in " + crdsStr
	}
	errs, warns := Count(findings)
	return fmt.Sprintf("%d %s, %d %s in %s",
		errs, plural(errs, "error", "errors"), warns, plural(warns, "warning", "warnings"), crdsStr)
}

// Count returns the number of error and warning findings.
func Count(findings []crdupgradesafety.Finding) (errs, warns int) {
	for _, f := range findings {
		if f.Severity == crdupgradesafety.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	return errs, warns
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
