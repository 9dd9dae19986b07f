package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	uitable "github.com/cppforlife/go-cli-ui/ui/table"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// This file is the one place that turns findings into lines and kapp
// tables: the preflight check (warnings and its error) and `kapp tools
// crd-upgrade-safety` (its table) both render through it.

// FindingLine renders one finding on one line, e.g.
//
//	crd widgets.example.com version v1 field ^.spec.size: [minimum] minimum increased: 1 -> 5
//
// CRD-level findings leave out the version and field parts they lack. It
// is the Text of the finding as a Report holds it.
func FindingLine(f finding.Finding) string { return findingOf(f).Text() }

// RemedyLine renders a finding's way forward as the line that follows its
// FindingLine in kapp's error and the webhook's denial ("" for none):
//
//	way forward: keep "v1alpha1", deploy the new storage version, run '...', then remove "v1alpha1"
func RemedyLine(f finding.Finding) string { return findingOf(f).RemedyLine() }

// ErrorLine renders an error finding for kapp's error: its FindingLine,
// then, indented on the next line, its RemedyLine.
func ErrorLine(f finding.Finding) string { return findingOf(f).ErrorLine() }

// Text renders the finding on one line (see FindingLine).
func (f Finding) Text() string {
	return f.subject() + ": [" + f.Check + "] " + f.Message + FingerprintSuffix(f.Fingerprint)
}

// RemedyLine renders the finding's way forward (see RemedyLine), "" for
// none.
func (f Finding) RemedyLine() string {
	if f.Remedy != nil && f.Remedy.Text != "" {
		return "way forward: " + f.Remedy.Text
	}
	return ""
}

// ErrorLine renders the finding for kapp's error (see ErrorLine).
func (f Finding) ErrorLine() string {
	if r := f.RemedyLine(); r != "" {
		return f.Text() + "\n    " + r
	}
	return f.Text()
}

// FindingSubject names what a finding is about: "crd widgets.example.com
// version v1 field ^.spec.size", leaving out the version and field parts
// it lacks.
func FindingSubject(crd, version, field string) string {
	var b strings.Builder
	b.WriteString("crd ")
	b.WriteString(crd)
	if version != "" {
		b.WriteString(" version ")
		b.WriteString(version)
	}
	if field != "" {
		b.WriteString(" field ")
		b.WriteString(field)
	}
	return b.String()
}

// OmittedLines renders the counts left out by finding.Bound, one
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
		lines = append(lines, OmittedLine(name, omitted[name]))
	}
	return lines
}

// OmittedLine renders how many findings of a CRD finding.Bound
// left out: "... and 3 more findings for CRD widgets.example.com".
func OmittedLine(crd string, n int) string {
	return fmt.Sprintf("... and %d more %s for CRD %s", n, plural.Of(n, "finding", "findings"), crd)
}

// Table keys double as the JSON keys of the rows under the global --json
// flag; they match the json tags of finding.Finding.
var findingsHeader = []uitable.Header{
	{Key: "crd", Title: "CRD"},
	{Key: "version", Title: "Version"},
	{Key: "field", Title: "Field"},
	{Key: "check", Title: "Check"},
	{Key: "severity", Title: "Severity"},
	{Key: "message", Title: "Message"},
	{Key: "remedy", Title: "Way forward"},
}

// baselineColumn is where the Baseline column goes when findings come
// from several git baselines: before the message.
const baselineColumn = 5

// TableOptions adapt FindingsTable to a person reading a terminal or a CI
// log. The zero value is the table as kapp's --json renders it: every
// message in full, and the count of rows.
type TableOptions struct {
	// MaxMessage, when above 0, puts each message on one line and
	// shortens those longer than MaxMessage characters (keeping their
	// start and end) with a note that other outputs print them in full;
	// the count of rows is left out (a summary line follows the table).
	MaxMessage int
	// FullOutputs names the outputs that print messages in full, for the
	// note.
	FullOutputs string
}

// FindingsTable renders the findings of r (those its per-CRD bound
// kept, in the one order of every output: Report.Ordered) as a kapp
// table; what the bound left out becomes table notes.
func FindingsTable(r Report, opts TableOptions) uitable.Table {
	findings := r.Ordered()
	table := uitable.Table{
		Title:   "CRD upgrade safety findings",
		Content: "findings",
		Header:  append([]uitable.Header(nil), findingsHeader...),
		// No SortBy: the rows keep the order of the findings
		// (finding.SortFindings: data loss first), which no
		// column sort gives.
		FillFirstColumn: true,
		Notes:           r.omittedLines(),
	}
	several := SeveralBaselines(findings)
	if several { // each row names the git baseline it comes from
		table.Header = slices.Insert(table.Header, baselineColumn, uitable.Header{Key: "baseline", Title: "Baseline"})
	}
	shortened := false
	for _, f := range findings {
		msg, remedy := f.Message+FingerprintSuffix(f.Fingerprint), ""
		if f.Remedy != nil {
			remedy = f.Remedy.Text
		}
		if opts.MaxMessage > 0 {
			var cut, rcut bool
			msg, cut = ShortenMessage(msg, opts.MaxMessage)
			remedy, rcut = ShortenMessage(remedy, opts.MaxMessage)
			shortened = shortened || cut || rcut
		}
		if remedy != "" && opts.MaxMessage > 0 {
			msg += "\n→ " + remedy // a line of its own under the message
		}
		row := []uitable.Value{
			uitable.NewValueString(f.CRD),
			uitable.NewValueString(f.Version),
			uitable.NewValueString(f.Field),
			uitable.NewValueString(f.Check),
			uitable.ValueFmt{
				V:     uitable.NewValueString(f.Severity),
				Error: f.Severity == string(finding.SeverityError),
			},
			uitable.NewValueString(msg),
			uitable.NewValueString(remedy),
		}
		if several {
			text := ""
			if f.Baseline != nil {
				text = BaselineText(*f.Baseline)
			}
			row = slices.Insert(row, baselineColumn, uitable.Value(uitable.NewValueString(text)))
		}
		table.Rows = append(table.Rows, row)
	}
	if opts.MaxMessage > 0 {
		table.Content = ""
		// The way forward is on the line under each message; the column
		// is for kapp's --json (its key "remedy").
		table.Header[len(table.Header)-1].Hidden = true
	}
	if shortened {
		note := fmt.Sprintf("Messages longer than %d characters are shortened (…)", opts.MaxMessage)
		if opts.FullOutputs != "" {
			note += "; " + opts.FullOutputs + " print them in full"
		}
		table.Notes = append(table.Notes, note+".")
	}
	return table
}

// ShortenMessage puts a message on one line (a multi-line CEL rule: its
// whitespace runs as single spaces) and, when it is longer than max
// characters, keeps its start and its end (where messages say what
// follows, "deleting its 2 existing custom resources") around " … ". It
// reports whether it shortened the message.
func ShortenMessage(msg string, max int) (string, bool) {
	msg = oneLine(msg)
	r := []rune(msg)
	if len(r) <= max {
		return msg, false
	}
	const ellipsis = " … "
	keep := max - len([]rune(ellipsis))
	head := keep * 2 / 3
	tail := keep - head
	return strings.TrimRight(string(r[:head]), " ") + ellipsis + strings.TrimLeft(string(r[len(r)-tail:]), " "), true
}

// oneLine returns msg with its runs of white space made one space where it
// holds a line break or a tab (as strings.Join(strings.Fields(msg), " ")),
// else msg as it is: a formatting of the words, which decides nothing.
func oneLine(msg string) string {
	if !slices.ContainsFunc([]rune(msg), func(r rune) bool { return r == '\r' || r == '\n' || r == '\t' }) {
		return msg
	}
	var b strings.Builder
	space := false
	for _, r := range msg {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Count returns the number of error and warning findings.
func Count(findings []finding.Finding) (errs, warns int) {
	for _, f := range findings {
		if f.Severity == finding.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	return errs, warns
}
