// Package report is the outcome of `kapp tools crd-upgrade-safety` as
// people and CI systems read it: every CRD checked with its findings, each
// finding with the file and line it is about, rendered as markdown (a
// pull-request comment), GitHub Actions workflow commands, SARIF 2.1.0
// (code scanning) or our own JSON document (docs/crd-upgrade-safety-report.schema.json).
// table.go renders the kapp table of the default output from a Report;
// deploy.go the lines the preflight check prints and its error
// (DeployError), from one Report; admission.go the webhook's answer, its
// findings also as status causes (DenialCauses). The services return facts
// (evaluation's UnsafeUpgradeError); the words are composed here, at the
// edge.
package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
)

// Report is the outcome of one run. It is also the document of the json
// output: its JSON encoding is the stable, documented schema.
type Report struct {
	// Safe: no finding is an error (the exit status is 0).
	Safe bool `json:"safe"`
	// CRDs are all CRDs checked, sorted by name, with or without findings.
	CRDs []CRD `json:"crds"`
	// Baselines are the git commits the old CRDs were read at (--git-ref,
	// in the order given); omitted for other inputs. The caller sets them.
	Baselines []finding.Baseline `json:"baselines,omitempty"`
}

// CRD is one CRD checked.
type CRD struct {
	Name string `json:"name"`
	// Safe: none of its findings is an error.
	Safe bool `json:"safe"`
	// Findings are its findings in the one order of every output
	// (finding.SortFindings), at most maxFindingsPerCRD of them.
	Findings []Finding `json:"findings"`
	// Omitted is how many more findings maxFindingsPerCRD left out.
	Omitted int `json:"omitted"`

	errors, warnings int            // over all findings, omitted ones included
	affected         map[string]int // objects affected per version (finding.Impact.VersionAffected)
	source           string         // where the objects read came from
}

// Finding is a finding.Finding with where it is.
type Finding struct {
	CRD      string `json:"crd"`
	Version  string `json:"version"`
	Field    string `json:"field"`
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	// Fingerprint is the finding's stable identity, what a waiver names.
	Fingerprint string `json:"fingerprint"`
	// File and Line: where the field (version, CRD) is in the new inputs;
	// for something the new inputs no longer have, the closest part of
	// the new CRD that is still there. "" and 0 when the new inputs have
	// no file (standard input) or nothing of the CRD (a CRD they dropped).
	File string `json:"file"`
	Line int    `json:"line"`
	// OldFile, OldLine and OldRevision: for something the new inputs no
	// longer have (a removed field, version or CRD), where it was in the
	// old inputs; OldRevision is the git revision of --git-ref. Omitted
	// otherwise.
	OldFile     string `json:"oldFile,omitempty"`
	OldLine     int    `json:"oldLine,omitempty"`
	OldRevision string `json:"oldRevision,omitempty"`
	// DataLoss: the change loses stored data (pruned fields, a CRD
	// deleted or replaced, a stored version removed).
	DataLoss bool `json:"dataLoss"`
	// Impact: what the finding does to the stored objects read (a
	// cluster, or --objects samples); omitted when none were read.
	Impact *finding.Impact `json:"impact,omitempty"`
	// Remedy: the safe way forward; every error finding has one.
	Remedy *Remedy `json:"remedy,omitempty"`
	// Baseline: the git commit the old CRD was read at (--git-ref);
	// omitted for other inputs.
	Baseline *finding.Baseline `json:"baseline,omitempty"`
	// Waiver is the waiver the finding is about: the one that waived it,
	// an expired one that no longer does, or the stale one of a
	// staleWaiver finding; nil for none.
	Waiver *Waiver `json:"waiver,omitempty"`
	// Acceptance is the acceptDataLoss entry the finding is about: the
	// one that accepted its loss of stored data, or one that names the
	// loss but falls short (gap); nil for none.
	Acceptance *Acceptance `json:"acceptance,omitempty"`
}

// Acceptance is an acceptDataLoss entry as JSON shows it
// (config.Acceptance), with what it did: accepted, or the gap that kept
// it from accepting the loss (expired, moreObjects, uncounted).
type Acceptance struct {
	CRD      string `json:"crd"`
	Check    string `json:"check"`
	Version  string `json:"version,omitempty"`
	Path     string `json:"path,omitempty"`
	Objects  int    `json:"objects"`
	Reason   string `json:"reason"`
	Owner    string `json:"owner,omitempty"`
	Expires  string `json:"expires"`
	Accepted bool   `json:"accepted"`
	Gap      string `json:"gap,omitempty"`
}

// acceptanceOf is the acceptance a finding is about, nil for none.
func acceptanceOf(f finding.Finding) *Acceptance {
	a, gap := f.Acceptance, ""
	if a == nil {
		a, gap = f.ShortAcceptance, string(f.AcceptanceGap)
	}
	if a == nil {
		return nil
	}
	return &Acceptance{CRD: a.CRD, Check: a.Check, Version: a.Version, Path: a.Path, Objects: a.Objects, Reason: a.Reason,
		Owner: a.Owner, Expires: a.ExpiresText(), Accepted: f.Acceptance != nil, Gap: gap}
}

// Waiver is a waiver as JSON shows it (config.Waiver), with what it did.
type Waiver struct {
	Fingerprint string   `json:"fingerprint,omitempty"`
	CRD         string   `json:"crd,omitempty"`
	Checks      []string `json:"checks,omitempty"`
	Path        string   `json:"path,omitempty"`
	Reason      string   `json:"reason"`
	Owner       string   `json:"owner,omitempty"`
	Expires     string   `json:"expires,omitempty"`
	Source      string   `json:"source"`
	Expired     bool     `json:"expired"`
	Stale       bool     `json:"stale"`
	// Refused says why a waiver that matches the finding does not waive
	// it: dataLoss, carriedOver, annotationNotAllowed; omitted otherwise.
	Refused string `json:"refused,omitempty"`
}

// waiverOf is the waiver a finding is about, nil for none.
func waiverOf(f finding.Finding) *Waiver {
	w, expired, stale, refused := f.Waiver, false, false, ""
	switch {
	case f.RefusedWaiver != nil:
		w, refused = f.RefusedWaiver, string(f.WaiverRefusal)
	case f.ExpiredWaiver != nil:
		w, expired = f.ExpiredWaiver, true
	case f.StaleWaiver != nil:
		w, stale = f.StaleWaiver, true
	}
	if w == nil {
		return nil
	}
	source := string(w.Source)
	if source == "" {
		source = string(config.SourceSettings)
	}
	return &Waiver{Fingerprint: w.Fingerprint, CRD: w.CRD, Checks: w.Checks, Path: w.Path, Reason: w.Reason, Owner: w.Owner,
		Expires: w.ExpiresText(), Source: source, Expired: expired, Stale: stale, Refused: refused}
}

// Location is a line of an input file. File is a path relative to the
// current directory (slash-separated), the URL of an input read over HTTP,
// or "" for standard input; Rev is the git revision the file was read at
// ("" for the file as it is on disk).
type Location struct {
	File string
	Line int
	Rev  string
}

// Locator returns where a finding is in the new inputs and, for something
// the new inputs no longer have, where it was in the old inputs (zero
// Locations when unknown).
type Locator func(finding.Finding) (newLoc, oldLoc Location)

// New builds the report of a run: checked names every CRD checked (the new
// CRDs and the removed ones), findings are all findings, sorted. At most
// maxPerCRD findings are kept per CRD (0 keeps all); locate (nil: no
// locations) is called for the kept ones only.
func New(checked []string, findings []finding.Finding, maxPerCRD int, locate Locator) Report {
	byName := map[string]*CRD{}
	for _, name := range checked {
		byName[name] = &CRD{Name: name, Safe: true, Findings: []Finding{}}
	}
	crd := func(name string) *CRD {
		c, ok := byName[name]
		if !ok { // a finding about a CRD the caller did not list
			c = &CRD{Name: name, Safe: true, Findings: []Finding{}}
			byName[name] = c
		}
		return c
	}
	for _, f := range findings {
		c := crd(f.CRD)
		if f.Impact != nil {
			if c.affected == nil {
				c.affected = map[string]int{}
			}
			c.affected[f.Version] = max(c.affected[f.Version], f.Impact.VersionAffected)
			c.source = f.Impact.Source
		}
		if f.Severity == finding.SeverityError {
			c.errors++
			c.Safe = false
		} else {
			c.warnings++
		}
	}
	kept, omitted := finding.Bound(findings, maxPerCRD)
	for _, f := range kept {
		rf := findingOf(f)
		if locate != nil {
			newLoc, oldLoc := locate(f)
			rf.File, rf.Line = newLoc.File, newLoc.Line
			if oldLoc.File != "" || oldLoc.Line > 0 {
				rf.OldFile, rf.OldLine, rf.OldRevision = oldLoc.File, oldLoc.Line, oldLoc.Rev
			}
		}
		c := crd(f.CRD)
		c.Findings = append(c.Findings, rf)
	}
	for name, n := range omitted {
		crd(name).Omitted = n
	}

	r := Report{Safe: true, CRDs: make([]CRD, 0, len(byName))}
	for _, c := range byName {
		r.CRDs = append(r.CRDs, *c)
		r.Safe = r.Safe && c.Safe
	}
	sort.Slice(r.CRDs, func(i, j int) bool { return r.CRDs[i].Name < r.CRDs[j].Name })
	return r
}

// findingOf is the report's Finding of f, without its location.
func findingOf(f finding.Finding) Finding {
	return Finding{CRD: f.CRD, Version: VersionText(f), Field: FieldText(f), Check: f.Check,
		Severity: string(f.Severity), Message: Message(f), Fingerprint: f.Fingerprint, DataLoss: f.DataLoss, Impact: f.Impact, Remedy: remedyOf(f),
		Waiver: waiverOf(f), Acceptance: acceptanceOf(f), Baseline: f.Baseline}
}

// Ordered returns the findings r keeps, of every CRD, in the one order of
// every output (finding.SortFindings, which New's findings come
// in): those that lose stored data first, then the others, each by CRD.
func (r Report) Ordered() []Finding {
	var out []Finding
	for _, dataLoss := range []bool{true, false} {
		for _, c := range r.CRDs {
			for _, f := range c.Findings {
				if f.DataLoss == dataLoss {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// omittedLines are the notes of what the per-CRD bound left out
// (OmittedLine), one per CRD, by CRD name.
func (r Report) omittedLines() []string {
	var lines []string
	for _, c := range r.CRDs {
		if c.Omitted > 0 {
			lines = append(lines, OmittedLine(c.Name, c.Omitted))
		}
	}
	return lines
}

// Counts returns the number of CRDs that are unsafe, and the error and
// warning findings over all CRDs (omitted findings included).
func (r Report) Counts() (unsafe, errors, warnings int) {
	for _, c := range r.CRDs {
		if !c.Safe {
			unsafe++
		}
		errors += c.errors
		warnings += c.warnings
	}
	return unsafe, errors, warnings
}

// Summary is the one line that says how it went: "3 CRDs checked, 1
// unsafe: 4 errors, 1 warning", or "3 CRDs checked: no unsafe changes";
// against which git baselines ("3 CRDs checked against origin/main
// (abc1234), ..."); where objects were read, how many the findings affect
// ("; 2 stored objects affected").
func (r Report) Summary() string {
	unsafe, errs, warns := r.Counts()
	checked := plural.Count(len(r.CRDs), "CRD", "CRDs") + " checked"
	if len(r.Baselines) > 0 {
		checked += " against " + baselinesText(r.Baselines)
	}
	if errs+warns == 0 {
		return checked + ": no unsafe changes"
	}
	u := "none"
	if unsafe > 0 {
		u = strconv.Itoa(unsafe)
	}
	s := fmt.Sprintf("%s, %s unsafe: %s, %s", checked, u,
		plural.Count(errs, "error", "errors"), plural.Count(warns, "warning", "warnings"))
	read, affected, source := false, 0, ""
	for _, c := range r.CRDs {
		for _, n := range c.affected {
			read, affected = true, affected+n
		}
		if c.source != "" {
			source = c.source
		}
	}
	if read {
		noun := "stored"
		if source == finding.SourceSamples {
			noun = "sample"
		}
		s += fmt.Sprintf("; %d %s %s affected", affected, noun, plural.Of(affected, "object", "objects"))
	}
	return s
}

// OmittedNote is the note about the findings of c that maxFindingsPerCRD
// left out ("" when none were).
func (c CRD) OmittedNote() string {
	if c.Omitted == 0 {
		return ""
	}
	return OmittedLine(c.Name, c.Omitted) + " (maxFindingsPerCRD; raise it to see them)"
}

// subject names what a finding is about: "crd widgets.example.com version
// v1 field ^.spec.size", leaving out the parts it lacks.
func (f Finding) subject() string { return FindingSubject(f.CRD, f.Version, f.Field) }

// newLocation and oldLocation return the finding's locations.
func (f Finding) newLocation() Location { return Location{File: f.File, Line: f.Line} }
func (f Finding) oldLocation() Location {
	return Location{File: f.OldFile, Line: f.OldLine, Rev: f.OldRevision}
}

// String renders "crds/widgets.yaml:12", "crds/widgets.yaml:12 at
// origin/main", "standard input line 12", or "" for no location.
func (l Location) String() string {
	var s string
	switch {
	case l.File == "" && l.Line == 0:
		return ""
	case l.File == "":
		return fmt.Sprintf("standard input line %d", l.Line)
	case l.Line > 0:
		s = fmt.Sprintf("%s:%d", l.File, l.Line)
	default:
		s = l.File
	}
	if l.Rev != "" {
		s += " at " + l.Rev
	}
	return s
}

// inWorkTree: the location is a line of a file on disk (not standard
// input, a URL or a file at a git revision), which GitHub can annotate.
func (l Location) inWorkTree() bool {
	return l.File != "" && l.Rev == "" && !strings.Contains(l.File, "://")
}
