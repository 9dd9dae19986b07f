package report

import (
	"strings"
	"sync"
	"unicode"

	"github.com/crdsafety/kapp/docs"
)

// ChecksDocURL is where docs/checks.md is published; a check's help links
// to its section there.
const ChecksDocURL = "https://github.com/crdsafety/kapp/blob/main/docs/checks.md"

// CheckHelp is the documentation of a check: its section of docs/checks.md.
type CheckHelp struct {
	// Heading is the section's title, e.g. "minimum, minLength, minItems, minProperties".
	Heading string
	// URL links to the section (ChecksDocURL and its GitHub anchor).
	URL string
	// Markdown is the section's text, without its heading.
	Markdown string
	// Short is its first sentence.
	Short string
}

var (
	helpOnce sync.Once
	helpByID map[string]CheckHelp
)

// HelpFor returns the section of docs/checks.md about a check ID; ok is
// false for an ID the docs have no section for (a test keeps every check
// ID documented).
func HelpFor(id string) (h CheckHelp, ok bool) {
	helpOnce.Do(func() { helpByID = parseCheckSections(docs.Checks) })
	h, ok = helpByID[id]
	return h, ok
}

// parseCheckSections maps each check ID to the section that documents it:
// a "##" or "###" heading naming the ID, alone or in a comma-separated list
// ("### minimum, minLength, ..."), optionally followed by a parenthesised
// remark ("### existingResources (live)"). Headings of group sections
// ("## Property checks (...)") name no ID.
func parseCheckSections(md string) map[string]CheckHelp {
	out := map[string]CheckHelp{}
	lines := strings.Split(md, "\n")
	inFence := false
	type heading struct {
		line int
		text string
	}
	var headings []heading
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		level := len(l) - len(strings.TrimLeft(l, "#"))
		if level >= 2 && level <= 3 && strings.HasPrefix(l[level:], " ") {
			headings = append(headings, heading{line: i, text: strings.TrimSpace(l[level:])})
		}
	}
	for hi, h := range headings {
		// The text up to the next heading: a group section ("## Property
		// checks") ends at its first subsection.
		end := len(lines)
		if hi+1 < len(headings) {
			end = headings[hi+1].line
		}
		names, _, _ := strings.Cut(h.text, " (")
		body := strings.TrimSpace(strings.Join(lines[h.line+1:end], "\n"))
		help := CheckHelp{Heading: h.text, URL: ChecksDocURL + "#" + anchor(h.text), Markdown: body, Short: firstSentence(body)}
		for _, id := range strings.Split(names, ",") {
			id = strings.TrimSpace(id)
			if id != "" && !strings.Contains(id, " ") {
				out[id] = help
			}
		}
	}
	return out
}

// anchor is GitHub's anchor of a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces as '-'.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstSentence is the text up to the first ". " (or the first line
// break that ends a paragraph), on one line.
func firstSentence(md string) string {
	para, _, _ := strings.Cut(md, "\n\n")
	para, _, _ = strings.Cut(para, "\n```")
	para = strings.Join(strings.Fields(para), " ")
	if i := strings.Index(para, ". "); i >= 0 {
		return para[:i+1]
	}
	return para
}
