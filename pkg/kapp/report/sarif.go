package report

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// ToolName and ToolURL name this tool in SARIF.
const (
	ToolName = "kapp crd-upgrade-safety"
	ToolURL  = "https://github.com/crdsafety/kapp"
)

// SARIF renders the report as a SARIF 2.1.0 log for code scanning (e.g.
// github/codeql-action/upload-sarif): one rule per check ID, documented by
// its section of docs/checks.md, and one result per finding with its level,
// its message in full and the file and line it is about (for something
// the new inputs no longer have, where it was in the old inputs as a
// related location). Only the SARIF properties a consumer reads are
// written; the output is validated against the SARIF schema in the tests.
func SARIF(r Report) ([]byte, error) {
	run := sarifRun{
		Tool:        sarifTool{Driver: sarifDriver{Name: ToolName, InformationURI: ToolURL}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: true}},
		Results:     []sarifResult{},
	}
	ruleIndex := map[string]int{}
	for _, id := range config.AllCheckIDs() {
		rule := sarifRule{ID: id, Name: id}
		if h, ok := HelpFor(id); ok {
			rule.ShortDescription = &sarifMessage{Text: h.Short}
			rule.Help = &sarifMultiformatMessage{Text: h.Markdown, Markdown: h.Markdown}
			rule.HelpURI = h.URL
		}
		ruleIndex[id] = len(run.Tool.Driver.Rules)
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, rule)
	}

	for _, c := range r.CRDs {
		for _, f := range c.Findings {
			res := sarifResult{
				RuleID:  f.Check,
				Level:   f.Severity, // "error" and "warning" are SARIF levels
				Message: sarifMessage{Text: sarifText(f, r.severalBaselines())},
				PartialFingerprints: map[string]string{
					"crdUpgradeSafety/v1": fingerprint(f.CRD, f.Version, f.Field, f.Check),
				},
			}
			if f.Fingerprint != "" {
				// The finding's own fingerprint (its change included), what
				// waivers name; the key above stays for the alerts code
				// scanning already tracks.
				res.PartialFingerprints["crdUpgradeSafetyFinding/v1"] = f.Fingerprint
			}
			if i, ok := ruleIndex[f.Check]; ok {
				res.RuleIndex = &i
			}
			if f.DataLoss || f.Impact != nil || f.Remedy != nil || f.Baseline != nil {
				res.Properties = &sarifProperties{DataLoss: f.DataLoss, Impact: f.Impact, Remedy: f.Remedy, Baseline: f.Baseline}
			}
			newLoc, oldLoc := f.newLocation(), f.oldLocation()
			primary := newLoc
			if primary.File == "" && oldLoc.Rev == "" {
				primary = oldLoc // a CRD dropped from the new inputs
			}
			loc := sarifLocation{LogicalLocations: []sarifLogicalLocation{{
				Name: f.CRD, FullyQualifiedName: fullyQualifiedName(f), Kind: "object",
			}}}
			loc.PhysicalLocation = physicalLocation(primary)
			res.Locations = []sarifLocation{loc}
			if oldLoc != primary && oldLoc.File != "" {
				text := "removed from here"
				if oldLoc.Rev != "" {
					text = "at " + oldLoc.Rev + ", removed from here"
				}
				res.RelatedLocations = []sarifLocation{{
					PhysicalLocation: physicalLocation(oldLoc), Message: &sarifMessage{Text: text},
				}}
			}
			run.Results = append(run.Results, res)
		}
		if note := c.OmittedNote(); note != "" {
			run.Invocations[0].ToolExecutionNotifications = append(run.Invocations[0].ToolExecutionNotifications,
				sarifNotification{Level: "note", Message: sarifMessage{Text: note}})
		}
	}

	out, err := marshalIndent(sarifLog{Schema: sarifSchemaURI, Version: "2.1.0", Runs: []sarifRun{run}})
	if err != nil {
		return nil, fmt.Errorf("encoding SARIF: %w", err)
	}
	return out, nil
}

// sarifText is a result's message: what the finding is about and says,
// then its way forward on a line of its own (code scanning shows the
// message, not the properties), and where the run compared with several
// git baselines, the finding's.
func sarifText(f Finding, severalBaselines bool) string {
	text := f.subject() + ": " + f.Message
	if f.Remedy != nil {
		text += "\nWay forward: " + f.Remedy.Text
	}
	if severalBaselines && f.Baseline != nil {
		text += "\nBaseline: " + f.baselineText() + "."
	}
	return text
}

const sarifSchemaURI = "https://json.schemastore.org/sarif-2.1.0.json"

func physicalLocation(l Location) *sarifPhysicalLocation {
	if l.File == "" {
		return nil // standard input
	}
	uri := l.File
	if !strings.Contains(uri, "://") {
		uri = (&url.URL{Path: uri}).String() // a relative reference: spaces and the like escaped
	}
	p := &sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: uri}}
	if l.Line > 0 {
		p.Region = &sarifRegion{StartLine: l.Line}
	}
	return p
}

// fullyQualifiedName names what a finding is about for SARIF's logical
// location: "widgets.example.com/v1/^.spec.size".
func fullyQualifiedName(f Finding) string {
	s := f.CRD
	if f.Version != "" {
		s += "/" + f.Version
	}
	if f.Field != "" {
		s += "/" + f.Field
	}
	return s
}

// fingerprint identifies a finding across runs whatever line it moves to,
// so that code scanning tracks one alert per CRD, version, field and check.
func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// The SARIF 2.1.0 objects this tool writes (a subset of the schema).
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool        sarifTool         `json:"tool"`
		Invocations []sarifInvocation `json:"invocations"`
		Results     []sarifResult     `json:"results"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		InformationURI string      `json:"informationUri"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID               string                   `json:"id"`
		Name             string                   `json:"name"`
		ShortDescription *sarifMessage            `json:"shortDescription,omitempty"`
		Help             *sarifMultiformatMessage `json:"help,omitempty"`
		HelpURI          string                   `json:"helpUri,omitempty"`
	}
	sarifInvocation struct {
		ExecutionSuccessful        bool                `json:"executionSuccessful"`
		ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
	}
	sarifNotification struct {
		Level   string       `json:"level"`
		Message sarifMessage `json:"message"`
	}
	sarifResult struct {
		RuleID              string            `json:"ruleId"`
		RuleIndex           *int              `json:"ruleIndex,omitempty"`
		Level               string            `json:"level"`
		Message             sarifMessage      `json:"message"`
		Locations           []sarifLocation   `json:"locations"`
		RelatedLocations    []sarifLocation   `json:"relatedLocations,omitempty"`
		PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
		Properties          *sarifProperties  `json:"properties,omitempty"`
	}
	// sarifProperties: what a finding does to stored objects (SARIF's
	// property bag of a result).
	sarifProperties struct {
		DataLoss bool            `json:"dataLoss,omitempty"`
		Impact   *finding.Impact `json:"impact,omitempty"`
		Remedy   *Remedy         `json:"remedy,omitempty"`
		// Baseline: the git commit the old CRD was read at (--git-ref).
		Baseline *finding.Baseline `json:"baseline,omitempty"`
	}
	sarifLocation struct {
		PhysicalLocation *sarifPhysicalLocation `json:"physicalLocation,omitempty"`
		LogicalLocations []sarifLogicalLocation `json:"logicalLocations,omitempty"`
		Message          *sarifMessage          `json:"message,omitempty"`
	}
	sarifPhysicalLocation struct {
		ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
		Region           *sarifRegion          `json:"region,omitempty"`
	}
	sarifArtifactLocation struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
	sarifLogicalLocation struct {
		Name               string `json:"name"`
		FullyQualifiedName string `json:"fullyQualifiedName"`
		Kind               string `json:"kind"`
	}
	sarifMessage struct {
		Text string `json:"text"`
	}
	sarifMultiformatMessage struct {
		Text     string `json:"text"`
		Markdown string `json:"markdown,omitempty"`
	}
)
