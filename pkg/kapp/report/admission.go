package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The admission webhook's answer to one CRD request, as kubectl and other
// clients print it: the error findings in the message of the denial, the
// other findings as admission warnings (kubectl prints each as a
// "Warning: " line). Both are bounded: a denial of a huge CRD stays
// readable, and the apiserver truncates or drops warnings beyond 4 KiB in
// all (to 256 characters each) and refuses a response over its size limit.
const (
	// MaxDenialLines bounds the findings listed in a denial.
	MaxDenialLines = 20
	// MaxWarnings bounds the admission warnings of one response, the
	// "... and N more" warning included.
	MaxWarnings = 15
	// MaxWarningRunes bounds one warning: the length the apiserver cuts
	// warnings to when they exceed 4 KiB in all.
	MaxWarningRunes = 256
)

// Admission renders findings (sorted, of one CRD) for an admission
// response: denial, the lines listing the error findings (FindingLine,
// at most MaxDenialLines, then "... and N more error findings"), and
// warnings, every other finding (at most MaxWarnings, each at most
// MaxWarningRunes characters: the start and the end of a long one).
func Admission(findings []finding.Finding) (denial, warnings []string) {
	var errs, warns []finding.Finding
	for _, f := range findings {
		if f.Severity == finding.SeverityError {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	for i, f := range errs {
		if i == MaxDenialLines {
			n := len(errs) - i
			denial = append(denial, fmt.Sprintf("... and %d more error %s", n, plural.Of(n, "finding", "findings")))
			break
		}
		line, _ := ShortenMessage(FindingLine(f), 4*MaxWarningRunes)
		if r := RemedyLine(f); r != "" {
			r, _ = ShortenMessage(r, 4*MaxWarningRunes)
			line += "\n    " + r
		}
		denial = append(denial, line)
	}
	for i, f := range warns {
		if i == MaxWarnings-1 && len(warns) > MaxWarnings {
			n := len(warns) - i
			warnings = append(warnings, fmt.Sprintf("%s: ... and %d more %s", config.CheckName, n, plural.Of(n, "warning", "warnings")))
			break
		}
		warnings = append(warnings, AdmissionWarning(WarningText(f)))
	}
	return denial, warnings
}

// WarningText renders a finding for an admission warning: FindingLine
// without the CRD, which the request names already, e.g.
// "version v1 field ^.spec.size: [mapType] ...".
func WarningText(f finding.Finding) string {
	subject := strings.TrimSpace(strings.TrimPrefix(FindingSubject("", VersionText(f), FieldText(f)), "crd "))
	if subject == "" {
		return "[" + f.Check + "] " + Message(f) + FingerprintSuffix(f.Fingerprint)
	}
	return subject + ": [" + f.Check + "] " + Message(f) + FingerprintSuffix(f.Fingerprint)
}

// AdmissionWarning makes text an admission warning: prefixed with the
// check's name, on one line, printable (the apiserver drops warnings with
// control characters), at most MaxWarningRunes characters.
func AdmissionWarning(text string) string {
	text = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == utf8.RuneError {
			return ' '
		}
		return r
	}, text)
	w, _ := ShortenMessage(config.CheckName+": "+text, MaxWarningRunes)
	return w
}

// DenialCauses are the findings of a denial as data (the status causes of
// the admission response): one config.FindingCause cause per error
// finding, its facts (config.FindingFacts: fingerprint, check, version,
// field) in the cause's field and, for the first MaxDenialLines, its line
// (FindingLine without the fingerprint, which the facts carry; at most
// MaxWarningRunes characters) in the cause's message. The others carry
// their facts alone, which keeps the response small on a huge CRD and
// still names each finding (a field past MaxWarningRunes characters
// shortened as a message is: the fingerprint and check match, the field
// names).
func DenialCauses(findings []finding.Finding) []metav1.StatusCause {
	var causes []metav1.StatusCause
	for _, f := range findings {
		if f.Severity != finding.SeverityError {
			continue
		}
		facts := config.FindingFacts{Fingerprint: f.Fingerprint, Check: f.Check, Version: f.Version, PairVersion: f.PairVersion}
		facts.Field, _ = ShortenMessage(FieldText(f), MaxWarningRunes)
		c := metav1.StatusCause{Type: metav1.CauseType(config.FindingCause), Field: facts.CauseField()}
		if len(causes) < MaxDenialLines {
			line := findingOf(f)
			line.Fingerprint = ""
			c.Message, _ = ShortenMessage(line.Text(), MaxWarningRunes)
		}
		causes = append(causes, c)
	}
	return causes
}
