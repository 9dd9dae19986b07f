package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func outputFile(name string) string {
	return filepath.Join("testdata", "crd-upgrade-safety", "output", name)
}

// runOutput runs the command in-process as a person would see it (kapp's
// TTY UI, no --json) and returns its standard output and error output.
func runOutput(t *testing.T, o *CRDUpgradeSafetyOptions) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &errOut, ui.NewNoopLogger()), ui.NewNoopLogger())
	o.ui = confUI
	o.Cluster = func() (evaluation.Cluster, error) {
		t.Fatalf("cluster contacted although old CRDs came from files")
		return nil, nil
	}
	err = o.Run()
	confUI.Flush()
	return out.String(), errOut.String(), err
}

func outputOptions(output string, old, new []string) *CRDUpgradeSafetyOptions {
	o := NewCRDUpgradeSafetyOptions(nil, nil)
	o.Output = output
	o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: old, NewFiles: new}
	return o
}

// TestCRDUpgradeSafetyOutputs: every output of one unsafe run against its
// golden file (go test ./pkg/kapp/cmd/tools/ -run Outputs -update
// rewrites them): the same findings, with their files and lines, and the
// same exit status (3) in every output.
func TestCRDUpgradeSafetyOutputs(t *testing.T) {
	old := []string{outputFile("old.yaml")}
	new := []string{outputFile("new.yaml"), outputFile("config.yaml")}
	golden := map[string]string{
		OutputTable: "table.txt", OutputMarkdown: "markdown.md", OutputGitHub: "github.txt",
		OutputSARIF: "sarif.json", OutputJSON: "report.json",
	}
	for _, output := range outputs {
		t.Run(output, func(t *testing.T) {
			stdout, stderr, err := runOutput(t, outputOptions(output, old, new))
			requireUnsafe(t, err)
			require.Equal(t, "unsafe CRD upgrade: 5 error findings", err.Error())
			require.Empty(t, stderr)
			requireGolden(t, outputFile(golden[output]), stdout)
			switch output {
			case OutputSARIF:
				requireValid(t, filepath.Join("..", "..", "report", "testdata", "sarif-schema-2.1.0.json"), stdout)
			case OutputJSON:
				requireValid(t, filepath.Join("..", "..", "..", "..", "docs", "crd-upgrade-safety-report.schema.json"), stdout)
			}
		})
	}

	t.Run("the table shortens the long CEL message, the others print it in full", func(t *testing.T) {
		// The message as the engine wrote it (it bounds each value it
		// quotes, here the 800-character rule, itself).
		var r report.Report
		require.NoError(t, json.Unmarshal(readGolden(t, "report.json"), &r))
		var cel string
		for _, c := range r.CRDs {
			for _, f := range c.Findings {
				if f.Check == "celValidation" {
					cel = f.Message
				}
			}
		}
		require.Greater(t, len(cel), TableMaxMessage)

		table := string(readGolden(t, "table.txt"))
		require.NotContains(t, table, cel)
		require.Contains(t, table, "Messages longer than 200 characters are shortened")
		require.Contains(t, string(readGolden(t, "markdown.md")), strings.NewReplacer("|", `\|`, "&", `\&`, "<", `\<`).Replace(cel))
		require.Contains(t, string(readGolden(t, "github.txt")), cel)
		var sarif struct {
			Runs []struct {
				Results []struct {
					RuleID  string
					Message struct{ Text string }
				}
			}
		}
		require.NoError(t, json.Unmarshal(readGolden(t, "sarif.json"), &sarif))
		found := false
		for _, res := range sarif.Runs[0].Results {
			found = found || res.RuleID == "celValidation" && strings.Contains(res.Message.Text, ": "+cel+"\nWay forward: ")
		}
		require.True(t, found, "the SARIF result of celValidation holds the whole message")
	})

	t.Run("json: each finding's file and line", func(t *testing.T) {
		stdout, _, _ := runOutput(t, outputOptions(OutputJSON, old, new))
		var r report.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &r))
		at := map[string]string{}
		for _, c := range r.CRDs {
			for _, f := range c.Findings {
				at[f.Check] = locationLine(t, f.File, f.Line) + " | " + locationLine(t, f.OldFile, f.OldLine)
			}
		}
		require.Equal(t, map[string]string{
			"celValidation":        "x-kubernetes-validations: | ",
			"existingFieldRemoval": "spec: | color:",
			"maximum":              "maximum: 5 | ",
			"enum":                 "enum: [medium, large] | ",
			"servedVersionRemoval": "versions: | - name: v1beta1",
			"versionLifecycle":     "versions: | - name: v1beta1",
			"crdDeletion":          " | apiVersion: apiextensions.k8s.io/v1",
		}, at)
	})
}

// locationLine is the text of a line of a file, trimmed ("" for none).
func locationLine(t *testing.T, file string, line int) string {
	t.Helper()
	if file == "" {
		return ""
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	lines := strings.Split(string(data), "\n")
	require.Less(t, line-1, len(lines))
	return strings.TrimSpace(lines[line-1])
}

// TestCRDUpgradeSafetyOutputsSafe: a safe run in every output, exit
// status 0; the table is one line.
func TestCRDUpgradeSafetyOutputsSafe(t *testing.T) {
	old := []string{outputFile("old.yaml")}
	for _, output := range outputs {
		t.Run(output, func(t *testing.T) {
			stdout, _, err := runOutput(t, outputOptions(output, old, old))
			require.NoError(t, err)
			switch output {
			case OutputTable:
				require.Equal(t, "3 CRDs checked: no unsafe changes\n", stdout)
			case OutputGitHub:
				require.Equal(t, "3 CRDs checked: no unsafe changes\n", stdout, "no annotation")
			case OutputMarkdown:
				require.True(t, strings.HasPrefix(stdout, "**CRD upgrade safety**: 3 CRDs checked: no unsafe changes\n"), stdout)
				require.NotContains(t, stdout, "| Severity")
			case OutputJSON:
				var r report.Report
				require.NoError(t, json.Unmarshal([]byte(stdout), &r))
				require.True(t, r.Safe)
				require.Len(t, r.CRDs, 3)
			case OutputSARIF:
				require.Contains(t, stdout, `"results": []`)
			}
		})
	}
}

// TestCRDUpgradeSafetyOutputsCouldNotRun: bad input is exit status 1 in
// every output, and nothing is printed on standard output.
func TestCRDUpgradeSafetyOutputsCouldNotRun(t *testing.T) {
	for _, output := range outputs {
		t.Run(output, func(t *testing.T) {
			stdout, _, err := runOutput(t, outputOptions(output, []string{outputFile("old.yaml")}, []string{td("not-yaml.yaml")}))
			requirePlainError(t, err)
			require.Empty(t, stdout)
		})
	}
}

func TestCRDUpgradeSafetyOutputFlag(t *testing.T) {
	_, _, err := runOutput(t, outputOptions("yaml", nil, []string{outputFile("new.yaml")}))
	requirePlainError(t, err)
	require.EqualError(t, err, `unknown --output "yaml" (allowed: table, markdown, github, sarif, json)`)

	o := outputOptions(OutputSARIF, nil, []string{outputFile("new.yaml")})
	o.GlobalJSON = true
	_, _, err = runOutput(t, o)
	requirePlainError(t, err)
	require.ErrorContains(t, err, "--json and --output sarif both choose the output")

	t.Run("--json keeps the table in full", func(t *testing.T) {
		resp, err := runWith(t, nil, []string{outputFile("old.yaml")}, []string{outputFile("new.yaml")}, nil)
		requireUnsafe(t, err)
		var cel string
		for _, r := range resp.rows(t) {
			if r["check"] == "celValidation" {
				cel = r["message"]
			}
		}
		require.Greater(t, len(cel), TableMaxMessage, "not shortened")
		require.NotContains(t, cel, "…")
		require.Equal(t, "findings", resp.Tables[0].Content)
	})
}

// requireValid validates a document against a JSON Schema file.
func requireValid(t *testing.T, schemaFile, doc string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(schemaFile)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(inst))
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(outputFile(name))
	require.NoError(t, err)
	return data
}

func requireGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s does not exist: run the test with -update", path)
	}
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}

// TestCRDUpgradeSafetyLiveProgress: against a cluster, the live checks show
// their progress through kapp's UI: on standard output beside the table,
// on standard error when standard output is a document.
func TestCRDUpgradeSafetyLiveProgress(t *testing.T) {
	oldSet, err := inputs.Load([]string{td("old.yaml")}, "old")
	require.NoError(t, err)
	live := oldSet.CRDs[0].CRD
	widget := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{"size": int64(7)}}
	const line = "CRDUpgradeSafety: live checks done: 2 of 2 CRDs, 1 custom resource validated in "

	for _, output := range []string{OutputTable, OutputJSON} {
		t.Run(output, func(t *testing.T) {
			o := outputOptions(output, nil, []string{td("new-safe.yaml")})
			o.progressInterval = 0
			var out, errOut bytes.Buffer
			confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &errOut, ui.NewNoopLogger()), ui.NewNoopLogger())
			o.ui = confUI
			o.Cluster = func() (evaluation.Cluster, error) {
				return &fakeCluster{crds: map[string]*apiextv1.CustomResourceDefinition{live.Name: live},
					objs: []map[string]any{widget}}, nil
			}
			require.NoError(t, o.Run())
			confUI.Flush()
			if output == OutputTable {
				require.Contains(t, out.String(), line)
				require.Empty(t, errOut.String())
				return
			}
			require.Contains(t, errOut.String(), line)
			require.True(t, json.Valid(out.Bytes()), out.String())
		})
	}
}
