package report

import (
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// Markdown renders the report for a pull-request comment or a GitHub job
// summary: the summary line, one table per CRD with findings, and the
// CRDs without findings in a folded list. Messages are kept in full.
func Markdown(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**CRD upgrade safety**: %s\n", mdText(r.Summary()))
	var clean []string
	for _, c := range r.CRDs {
		if len(c.Findings) == 0 && c.Omitted == 0 {
			clean = append(clean, c.Name)
			continue
		}
		state := "safe"
		if !c.Safe {
			state = "unsafe"
		}
		fmt.Fprintf(&b, "\n#### %s: %s, %s, %s\n\n", mdCode(c.Name), state,
			plural.Count(c.errors, "error", "errors"), plural.Count(c.warnings, "warning", "warnings"))
		several := r.severalBaselines()
		if several {
			b.WriteString("| Severity | Version | Field | Check | Baseline | Message | Location |\n")
			b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
		} else {
			b.WriteString("| Severity | Version | Field | Check | Message | Location |\n")
			b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		}
		for _, f := range c.Findings {
			severity := f.Severity
			if severity == "error" {
				severity = "**error**"
			}
			check := mdText(f.Check)
			if h, ok := HelpFor(f.Check); ok {
				check = fmt.Sprintf("[%s](%s)", check, h.URL)
			}
			msg := mdText(f.Message)
			if f.Fingerprint != "" {
				msg += " " + mdCode("fp:"+f.Fingerprint)
			}
			if f.Remedy != nil {
				msg += "<br>**Way forward:** " + mdText(f.Remedy.Text)
			}
			if several {
				check += " | " + mdText(f.baselineText())
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
				severity, mdText(f.Version), mdCode(f.Field), check, msg, mdText(locationText(f)))
		}
		if note := c.OmittedNote(); note != "" {
			fmt.Fprintf(&b, "\n_%s_\n", mdText(note))
		}
	}
	if len(clean) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>%s without findings</summary>\n\n", plural.Count(len(clean), "CRD", "CRDs"))
		for _, name := range clean {
			fmt.Fprintf(&b, "- %s\n", mdCode(name))
		}
		b.WriteString("\n</details>\n")
	}
	return b.String()
}

// locationText renders where a finding is: "new.yaml:12", and for
// something the new inputs no longer have "new.yaml:8, was old.yaml:14".
func locationText(f Finding) string {
	n, o := f.newLocation().String(), f.oldLocation().String()
	switch {
	case n != "" && o != "":
		return n + ", was " + o
	case n != "":
		return n
	default:
		return o
	}
}

// mdEscaper escapes what GitHub-flavoured markdown would read as markup in
// a table cell (where block syntax such as '#' or '>' means nothing): the
// ASCII punctuation that starts emphasis, strikethrough, links, code, HTML
// or entities, or ends the cell. Line breaks become <br>.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "~", `\~`, "[", `\[`, "]", `\]`,
	"<", `\<`, "&", `\&`, "|", `\|`,
	"\r\n", "<br>", "\n", "<br>", "\r", "<br>",
)

func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode renders s as a code span in a table cell ("" stays empty): the
// fence is longer than any run of backticks in s, and '|' is escaped (GFM
// splits cells before it parses code spans).
func mdCode(s string) string {
	if s == "" {
		return ""
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	if fence != "`" || strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
