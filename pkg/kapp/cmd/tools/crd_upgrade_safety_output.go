package tools

import (
	"fmt"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/report"
)

// The outputs of `kapp tools crd-upgrade-safety --output`.
const (
	OutputTable    = "table"    // kapp's table and a summary line (kapp's --json applies to it)
	OutputMarkdown = "markdown" // a pull-request comment
	OutputGitHub   = "github"   // GitHub Actions workflow commands: annotations on the diff
	OutputSARIF    = "sarif"    // SARIF 2.1.0, for code scanning
	OutputJSON     = "json"     // our own document (docs/crd-upgrade-safety-report.schema.json)
)

var outputs = []string{OutputTable, OutputMarkdown, OutputGitHub, OutputSARIF, OutputJSON}

// DocumentOutputAnnotation is set on the command when its standard output
// is a document (every --output but table): kapp's closing "Succeeded"
// line would corrupt it, and is left out.
const DocumentOutputAnnotation = "crdsafety.kapp/document-output"

// TableMaxMessage is the length beyond which the table shortens messages
// (the other outputs keep them in full).
const TableMaxMessage = 200

func (o *CRDUpgradeSafetyOptions) checkOutput() error {
	known := false
	for _, out := range outputs {
		known = known || o.Output == out
	}
	switch {
	case !known:
		return fmt.Errorf("unknown --output %q (allowed: %s)", o.Output, strings.Join(outputs, ", "))
	case o.GlobalJSON && o.Output != OutputTable:
		return fmt.Errorf("--json and --output %s both choose the output: --json is kapp's JSON form of the table output; "+
			"use --output json alone for the findings document", o.Output)
	}
	return nil
}

// printReport prints the outcome of a run in the chosen output. checked
// names every CRD checked; newCRDs and oldCRDs locate the findings (only
// the outputs that print locations read them, and only for CRDs with
// findings).
func (o *CRDUpgradeSafetyOptions) printReport(checked []string, findings []crdupgradesafety.Finding, maxPerCRD int,
	newCRDs, oldCRDs []inputs.CRD) error {

	if o.Output == OutputTable {
		return o.printFindingsTable(report.New(checked, findings, maxPerCRD, nil), findings, maxPerCRD)
	}
	locator := inputs.NewLocator(newCRDs, oldCRDs)
	rep := report.New(checked, findings, maxPerCRD, func(f crdupgradesafety.Finding) (newLoc, oldLoc report.Location) {
		newPos, oldPos := locator.Locate(inputs.Target{CRD: f.CRD, Version: f.Version, PairVersion: f.PairVersion, Field: f.Field, CRDField: f.CRDField, Check: f.Check})
		return location(newPos), location(oldPos)
	})
	var out []byte
	var err error
	switch o.Output {
	case OutputMarkdown:
		out = []byte(report.Markdown(rep))
	case OutputGitHub:
		out = []byte(report.GitHub(rep))
	case OutputSARIF:
		out, err = report.SARIF(rep)
	case OutputJSON:
		out, err = report.JSON(rep)
	}
	if err != nil {
		return err
	}
	o.ui.PrintBlock(out)
	return nil
}

// location is a position in the inputs as the report names it.
func location(p inputs.Position) report.Location {
	return report.Location{File: p.File, Line: p.Line, Rev: p.Rev}
}

// printFindingsTable prints kapp's table of findings and the summary line; with
// no findings, the summary line alone (kapp's --json keeps its table, empty).
func (o *CRDUpgradeSafetyOptions) printFindingsTable(rep report.Report, findings []crdupgradesafety.Finding, maxPerCRD int) error {
	if len(findings) > 0 || o.GlobalJSON {
		opts := report.TableOptions{}
		if !o.GlobalJSON {
			opts = report.TableOptions{MaxMessage: TableMaxMessage, FullOutputs: "--output json, markdown, github and sarif"}
		}
		kept, omitted := crdupgradesafety.Bound(findings, maxPerCRD)
		if err := printTable(o.ui, "findings", report.FindingsTable(kept, omitted, opts)); err != nil {
			return err
		}
	}
	o.ui.PrintLinef("%s", rep.Summary())
	return nil
}
