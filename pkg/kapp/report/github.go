package report

import (
	"fmt"
	"strings"
)

// GitHub renders the report as GitHub Actions workflow commands: one
// `::error` or `::warning` annotation per finding, on the file and line it
// is about (so it shows on the pull request's diff), a `::notice` per CRD
// whose findings maxFindingsPerCRD cut short, then the summary as a plain
// log line. Messages are kept in full.
//
// See https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions.
func GitHub(r Report) string {
	var b strings.Builder
	for _, c := range r.CRDs {
		for _, f := range c.Findings {
			command := "warning"
			if f.Severity == "error" {
				command = "error"
			}
			var props []string
			loc := f.newLocation()
			if !loc.inWorkTree() {
				loc = f.oldLocation() // e.g. a CRD dropped from the new inputs
			}
			if loc.inWorkTree() {
				props = append(props, "file="+escapeProperty(loc.File))
				if loc.Line > 0 {
					props = append(props, fmt.Sprintf("line=%d", loc.Line))
				}
			}
			props = append(props, "title="+escapeProperty(f.Check+" in "+f.CRD))

			msg := f.subject() + ": " + f.Message + FingerprintSuffix(f.Fingerprint)
			if f.Remedy != nil {
				msg += "\nWay forward: " + f.Remedy.Text
			}
			if r.severalBaselines() && f.Baseline != nil {
				msg += "\nBaseline: " + f.baselineText() + "."
			}
			if at := locationText(f); at != "" && at != loc.String() {
				msg += "\nAt " + at + "."
			}
			if h, ok := HelpFor(f.Check); ok {
				msg += "\nDocs: " + h.URL
			}
			fmt.Fprintf(&b, "::%s %s::%s\n", command, strings.Join(props, ","), escapeData(msg))
		}
		if note := c.OmittedNote(); note != "" {
			fmt.Fprintf(&b, "::notice title=%s::%s\n", escapeProperty("CRD upgrade safety"), escapeData(note))
		}
	}
	b.WriteString(r.Summary())
	b.WriteString("\n")
	return b.String()
}

// escapeData escapes the message of a workflow command as the GitHub
// Actions runner unescapes it (actions/toolkit's escapeData).
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a property value of a workflow command
// (actions/toolkit's escapeProperty): also ':' and ',', which separate
// properties.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
