package tools

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cppforlife/go-cli-ui/ui"
	uitable "github.com/cppforlife/go-cli-ui/ui/table"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
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

// outputFileFlag is an --output-file: an output of the run written to a file.
type outputFileFlag struct {
	kind, path string
}

// checkOutput checks --output and --output-file and returns the files.
func (o *CRDUpgradeSafetyOptions) checkOutput() ([]outputFileFlag, error) {
	allowed := strings.Join(outputs, ", ")
	switch {
	case !slices.Contains(outputs, o.Output):
		return nil, fmt.Errorf("unknown --output %q (allowed: %s)", o.Output, allowed)
	case o.GlobalJSON && o.Output != OutputTable:
		return nil, fmt.Errorf("--json and --output %s both choose the output: --json is kapp's JSON form of the table output; "+
			"use --output json alone for the findings document", o.Output)
	}
	var files []outputFileFlag
	paths := map[string]string{} // cleaned path: the value that named it
	for _, v := range o.OutputFiles {
		kind, path, ok := strings.Cut(v, "=")
		switch {
		case !ok || path == "":
			return nil, fmt.Errorf("--output-file %q: expected KIND=PATH (KIND one of %s)", v, allowed)
		case !slices.Contains(outputs, kind):
			return nil, fmt.Errorf("--output-file %q: unknown output %q (allowed: %s)", v, kind, allowed)
		case path == "-":
			return nil, fmt.Errorf("--output-file %q: standard output is --output's; name a file", v)
		}
		key := filepath.Clean(path)
		if abs, err := filepath.Abs(path); err == nil {
			key = abs
		}
		if prev, dup := paths[key]; dup {
			return nil, fmt.Errorf("--output-file %q: the same file as --output-file %q; each output needs its own file", v, prev)
		}
		paths[key] = v
		files = append(files, outputFileFlag{kind: kind, path: path})
	}
	return files, nil
}

// printReports prints the outcome of a run in the --output form, then
// writes each --output-file. checked names every CRD checked; newCRDs and
// the old sides locate the findings (only the outputs that print
// locations read them, and only for CRDs with findings).
func (o *CRDUpgradeSafetyOptions) printReports(files []outputFileFlag, checked []string, findings []finding.Finding, maxPerCRD int,
	newCRDs []inputs.CRD, sides []oldSide) error {

	r := reporter{checked: checked, findings: findings, maxPerCRD: maxPerCRD, locators: map[string]*inputs.Locator{}}
	for _, side := range sides {
		key := ""
		if side.baseline != nil {
			key = side.baseline.Commit
			r.baselines = append(r.baselines, *side.baseline)
		}
		r.locators[key] = inputs.NewLocator(newCRDs, side.set.CRDs)
	}
	if err := r.print(o.ui, o.Output, o.GlobalJSON); err != nil {
		return err
	}
	for _, f := range files {
		var out bytes.Buffer
		u := ui.NewWrappingConfUI(ui.NewWriterUI(&out, io.Discard, ui.NewNoopLogger()), ui.NewNoopLogger())
		err := r.print(u, f.kind, false)
		u.Flush()
		if err == nil {
			err = os.WriteFile(f.path, out.Bytes(), 0o644)
		}
		if err != nil {
			return fmt.Errorf("--output-file %s=%s: %w", f.kind, f.path, err)
		}
	}
	return nil
}

// reporter renders one run's outcome in any output.
type reporter struct {
	checked   []string
	findings  []finding.Finding
	maxPerCRD int
	baselines []finding.Baseline
	// locators by the commit of a finding's baseline ("" for none).
	locators map[string]*inputs.Locator
}

// print prints the outcome in output to u; globalJSON: kapp's --json is
// on (the table as kapp's JSON document).
func (r reporter) print(u ui.UI, output string, globalJSON bool) error {
	if output == OutputTable {
		rep := report.New(r.checked, r.findings, r.maxPerCRD, nil)
		rep.Baselines = r.baselines
		return printFindingsTable(u, globalJSON, rep)
	}
	rep := report.New(r.checked, r.findings, r.maxPerCRD, func(f finding.Finding) (newLoc, oldLoc report.Location) {
		key := ""
		if f.Baseline != nil {
			key = f.Baseline.Commit
		}
		newPos, oldPos := r.locators[key].Locate(inputs.Target{CRD: f.CRD, Version: f.Version, PairVersion: f.PairVersion, Field: f.Field, CRDField: f.CRDField, Check: f.Check})
		return location(newPos), location(oldPos)
	})
	rep.Baselines = r.baselines
	var out []byte
	var err error
	switch output {
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
	u.PrintBlock(out)
	return nil
}

// location is a position in the inputs as the report names it.
func location(p inputs.Position) report.Location {
	return report.Location{File: p.File, Line: p.Line, Rev: p.Rev}
}

// printFindingsTable prints kapp's table of the report's findings and its
// summary line; with no findings, the summary line alone (kapp's --json
// keeps its table, empty).
func printFindingsTable(u ui.UI, globalJSON bool, rep report.Report) error {
	if _, errs, warns := rep.Counts(); errs+warns > 0 || globalJSON {
		opts := report.TableOptions{}
		if !globalJSON {
			opts = report.TableOptions{MaxMessage: TableMaxMessage, FullOutputs: "--output json, markdown, github and sarif"}
		}
		if err := printTable(u, "findings", report.FindingsTable(rep, opts)); err != nil {
			return err
		}
	}
	u.PrintLinef("%s", rep.Summary())
	return nil
}

// printTable prints a table of what (e.g. "findings"). go-cli-ui panics on a --column naming no
// header; that is bad input, reported as an error here.
func printTable(u ui.UI, what string, table uitable.Table) (err error) {
	defer func() {
		if r := recover(); r != nil {
			keys := make([]string, len(table.Header))
			for i, h := range table.Header {
				keys[i] = h.Key
			}
			err = fmt.Errorf("printing %s: %v (columns: %s)", what, r, strings.Join(keys, ", "))
		}
	}()
	u.PrintTable(table)
	return nil
}

// notef prints a note on how the run went (standard error: standard
// output may be a document).
func (o *CRDUpgradeSafetyOptions) notef(format string, args ...any) {
	o.ui.ErrorLinef(format, args...)
}
