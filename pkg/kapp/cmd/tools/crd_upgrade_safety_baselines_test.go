package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/crdsafety/kapp/pkg/kapp/internal/gittest"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
)

// widgetsWithShape is gittest.WidgetsV1 with a field main adds after the
// branch point.
const widgetsWithShape = "{size: {type: string, enum: [small, large]}, color: {type: string}, shape: {type: string}}"

// branchedRepo makes the case of openstack-k8s-operators#1201: a branch
// (feature, checked out) that changes the widgets CRD unsafely (drops the
// enum value small), and main, which moved on after the branch point and
// added the field shape that the branch never had. It returns the branch
// point's and main's commits.
func branchedRepo(t *testing.T) (branchPoint, mainTip string) {
	t.Helper()
	gittest.NewRepo(t, func(dir string) {
		branchPoint = strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		gittest.Git(t, dir, "checkout", "-q", "-b", "feature")
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget",
			"{size: {type: string, enum: [large]}, color: {type: string}}")})
		gittest.Git(t, dir, "commit", "-q", "-am", "feature: drop small")
		gittest.Git(t, dir, "checkout", "-q", "main")
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", widgetsWithShape)})
		gittest.Git(t, dir, "commit", "-q", "-am", "main: add shape")
		mainTip = strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		gittest.Git(t, dir, "checkout", "-q", "feature")
	})
	return branchPoint, mainTip
}

// TestGitRefMergeBase: by default --git-ref compares with the merge base
// of the revision and HEAD, so a field main added after the branch point
// is not reported as removed by the branch; --git-ref-tip compares with
// main's tip and reports it.
func TestGitRefMergeBase(t *testing.T) {
	branchPoint, mainTip := branchedRepo(t)

	r, _, err := gitRun(t, "main", "config/crds/")
	requireUnsafe(t, err)
	require.Equal(t, []string{"widgets.example.com enum ^.spec.size @ config/crds/widgets.yaml:19"}, findingsOf(r),
		"the branch's own change only: no removal of shape")
	require.Equal(t, []string{"main (merge base " + branchPoint[:7] + ")"}, baselinesOf(r))

	o := gitOptions(OutputJSON, "main", "config/crds/")
	o.FileFlags.GitRefTip = true
	stdout, _, err := runOutput(t, o)
	requireUnsafe(t, err)
	var tip report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &tip))
	require.Equal(t, []string{
		"widgets.example.com existingFieldRemoval ^.spec.shape @ config/crds/widgets.yaml:17 (was config/crds/widgets.yaml:19 at main)",
		"widgets.example.com enum ^.spec.size @ config/crds/widgets.yaml:19",
	}, findingsOf(tip), "against main's tip, shape looks removed")
	require.Equal(t, []string{"main (" + mainTip[:7] + ")"}, baselinesOf(tip))

	t.Run("removals name the merge base's commit as their revision", func(t *testing.T) {
		gittest.WriteFiles(t, ".", map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
		t.Cleanup(func() { gittest.Git(t, ".", "checkout", "-q", "--", "config/crds/widgets.yaml") })
		r, _, err := gitRun(t, "main", "config/crds/")
		requireUnsafe(t, err)
		require.Contains(t, findingsOf(r),
			"widgets.example.com existingFieldRemoval ^.spec.color @ config/crds/widgets.yaml:17 (was config/crds/widgets.yaml:19 at "+branchPoint[:12]+")")
	})
	t.Run("the table's summary names the baseline", func(t *testing.T) {
		stdout, _, err := runOutput(t, gitOptions(OutputTable, "main", "config/crds/"))
		requireUnsafe(t, err)
		require.Contains(t, stdout, "2 CRDs checked against main (merge base "+branchPoint[:7]+"), 1 unsafe: 1 error, 0 warnings\n")
		require.NotContains(t, stdout, "Baseline", "one baseline: no column")
	})
	t.Run("errors", func(t *testing.T) {
		gittest.Git(t, ".", "checkout", "-q", "--orphan", "unrelated")
		gittest.Git(t, ".", "commit", "-q", "-m", "another history")
		gittest.Git(t, ".", "checkout", "-q", "feature")
		_, _, err := gitRun(t, "unrelated", "config/crds/")
		requirePlainError(t, err)
		require.ErrorIs(t, err, inputs.ErrNoMergeBase)
		require.ErrorContains(t, err, "unrelated and HEAD share no history (unrelated histories); compare with the tip of unrelated (--git-ref-tip)")

		o := outputOptions(OutputJSON, []string{"config/crds/"}, []string{"config/crds/"})
		o.FileFlags.GitRefTip = true
		_, _, err = runOutput(t, o)
		requirePlainError(t, err)
		require.EqualError(t, err, "expected --git-ref-tip with --git-ref: it says which commit of each --git-ref revision the old CRDs are read at")
	})
}

// baselinesOf renders a report's baselines as text.
func baselinesOf(r report.Report) []string {
	var out []string
	for _, b := range r.Baselines {
		out = append(out, report.BaselineText(b))
	}
	return out
}

// TestGitRefSeveral: --git-ref given twice (the last two releases): the
// new CRDs are compared with each, every finding names its baseline, and
// a revision that is the same commit as another is compared once.
func TestGitRefSeveral(t *testing.T) {
	reportSchema, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "docs", "crd-upgrade-safety-report.schema.json"))
	require.NoError(t, err)
	sarifSchema, err := filepath.Abs(filepath.Join("..", "..", "report", "testdata", "sarif-schema-2.1.0.json"))
	require.NoError(t, err)
	var v1, v2 string
	gittest.NewRepo(t, func(dir string) {
		gittest.Git(t, dir, "tag", "v1.0.0")
		v1 = strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		// v1.1.0 drops the enum value small (released: users have it).
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget",
			"{size: {type: string, enum: [large]}, color: {type: string}}")})
		gittest.Git(t, dir, "commit", "-q", "-am", "release 1.1")
		gittest.Git(t, dir, "tag", "v1.1.0")
		v2 = strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
		// The work tree drops color.
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
	})

	o := gitOptions(OutputJSON, "v1.0.0", "config/crds/widgets.yaml")
	o.FileFlags.GitRefs = append(o.FileFlags.GitRefs, "v1.1.0", "v1.1.0^{commit}")
	stdout, stderr, err := runOutput(t, o)
	requireUnsafe(t, err)
	require.Equal(t, "unsafe CRD upgrade: 3 error findings", err.Error())
	require.Contains(t, stderr, "--git-ref v1.1.0^{commit}: the same commit as --git-ref v1.1.0 ("+v2+"), compared once")
	requireValid(t, reportSchema, stdout)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, []string{"v1.0.0 (" + v1[:7] + ")", "v1.1.0 (" + v2[:7] + ")"}, baselinesOf(r))
	var got []string
	for _, f := range r.CRDs[0].Findings {
		got = append(got, f.Check+" "+f.Field+" against "+report.BaselineText(*f.Baseline))
	}
	require.Equal(t, []string{
		"existingFieldRemoval ^.spec.color against v1.0.0 (" + v1[:7] + ")",
		"existingFieldRemoval ^.spec.color against v1.1.0 (" + v2[:7] + ")",
		"enum ^.spec.size against v1.0.0 (" + v1[:7] + ")",
	}, got, "small was dropped in v1.1.0: only the upgrade from v1.0.0 drops it")

	trailing := regexp.MustCompile(`(?m)[ \t]+$`)
	t.Run("table: a Baseline column", func(t *testing.T) {
		o.Output = OutputTable
		stdout, _, err := runOutput(t, o)
		requireUnsafe(t, err)
		stdout = trailing.ReplaceAllString(stdout, "")
		require.Contains(t, stdout, "Severity  Baseline          Message")
		require.Contains(t, stdout, "error     v1.1.0 ("+v2[:7]+")  data loss: existing field removed (was string)")
		require.Contains(t, stdout, "1 CRD checked against v1.0.0 ("+v1[:7]+") and v1.1.0 ("+v2[:7]+"), 1 unsafe: 3 errors, 0 warnings")
	})
	t.Run("markdown, github and sarif name each finding's", func(t *testing.T) {
		for output, want := range map[string]string{
			OutputMarkdown: "| **error** | v1 | `^.spec.size` | [enum](https://github.com/crdsafety/kapp/blob/main/docs/checks.md#enum) | v1.0.0 (" + v1[:7] + ") | enum values removed",
			OutputGitHub:   "enum values removed: [\"small\"] [fp:00bc713c27ba]%0AWay forward: make sure no stored object fails it first (a live run or --objects names those that do), or keep the old constraint, or make the change in a new version%0ABaseline: v1.0.0 (" + v1[:7] + ").",
			OutputSARIF:    `"baseline": {` + "\n" + `              "ref": "v1.0.0",`,
		} {
			o.Output = output
			stdout, _, err := runOutput(t, o)
			requireUnsafe(t, err)
			require.Contains(t, stdout, want, output)
			if output == OutputSARIF {
				requireValid(t, sarifSchema, stdout)
			}
		}
	})
}

// TestGitStaged: --git-staged reads the new CRDs as staged, as a
// pre-commit hook must: an unsafe change on disk that is not staged does
// not count, a staged one does.
func TestGitStaged(t *testing.T) {
	gittest.NewRepo(t, func(dir string) {
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
	})
	staged := func() *CRDUpgradeSafetyOptions {
		o := gitOptions(OutputJSON, "HEAD", "config/crds/")
		o.FileFlags.GitStaged = true
		return o
	}
	_, _, err := runOutput(t, staged())
	require.NoError(t, err, "the unsafe change is not staged")

	gittest.Git(t, ".", "add", "config/crds/widgets.yaml")
	stdout, _, err := runOutput(t, staged())
	requireUnsafe(t, err)
	var r report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	require.Equal(t, []string{
		"widgets.example.com existingFieldRemoval ^.spec.color @ config/crds/widgets.yaml:17 (was config/crds/widgets.yaml:19 at HEAD)",
		"widgets.example.com enum ^.spec.size @ config/crds/widgets.yaml:19",
	}, findingsOf(r))

	t.Run("without an old side", func(t *testing.T) {
		o := staged()
		o.FileFlags.GitRefs = nil
		_, _, err := runOutput(t, o)
		requirePlainError(t, err)
		require.EqualError(t, err, "expected --git-staged with --git-ref (e.g. --git-ref HEAD: what the next commit changes) or --file")
	})
}

// TestOutputFiles: one run writes several outputs: --output to standard
// output and each --output-file to its file, the same findings in each,
// with the exit status of the run.
func TestOutputFiles(t *testing.T) {
	dir := t.TempDir()
	old := []string{outputFile("old.yaml")}
	new := []string{outputFile("new.yaml"), outputFile("config.yaml")}
	o := outputOptions(OutputGitHub, old, new)
	o.OutputFiles = []string{
		"sarif=" + filepath.Join(dir, "results.sarif"),
		"markdown=" + filepath.Join(dir, "summary.md"),
		"json=" + filepath.Join(dir, "report.json"),
		"table=" + filepath.Join(dir, "table.txt"),
	}
	stdout, _, err := runOutput(t, o)
	requireUnsafe(t, err)
	require.Equal(t, string(readGolden(t, "github.txt")), stdout)
	for file, g := range map[string]string{"results.sarif": "sarif.json", "summary.md": "markdown.md", "report.json": "report.json", "table.txt": "table.txt"} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		require.Equal(t, string(readGolden(t, g)), string(data), file)
	}

	t.Run("safe: the files too", func(t *testing.T) {
		o := outputOptions(OutputJSON, old, old)
		o.OutputFiles = []string{"markdown=" + filepath.Join(dir, "safe.md")}
		_, _, err := runOutput(t, o)
		require.NoError(t, err)
		data, err := os.ReadFile(filepath.Join(dir, "safe.md"))
		require.NoError(t, err)
		require.Contains(t, string(data), "no unsafe changes")
	})

	for name, tc := range map[string]struct {
		files []string
		err   string
	}{
		"unknown kind": {[]string{"html=x.html"}, `--output-file "html=x.html": unknown output "html" (allowed: table, markdown, github, sarif, json)`},
		"no path":      {[]string{"sarif="}, `--output-file "sarif=": expected KIND=PATH (KIND one of table, markdown, github, sarif, json)`},
		"no kind":      {[]string{"results.sarif"}, `--output-file "results.sarif": expected KIND=PATH (KIND one of table, markdown, github, sarif, json)`},
		"stdout":       {[]string{"json=-"}, `--output-file "json=-": standard output is --output's; name a file`},
		"same file":    {[]string{"sarif=out/a", "json=out/../out/a"}, `--output-file "json=out/../out/a": the same file as --output-file "sarif=out/a"; each output needs its own file`},
	} {
		t.Run(name, func(t *testing.T) {
			o := outputOptions(OutputTable, old, new)
			o.OutputFiles = tc.files
			_, _, err := runOutput(t, o)
			requirePlainError(t, err)
			require.EqualError(t, err, tc.err)
		})
	}
	t.Run("a file that cannot be written", func(t *testing.T) {
		o := outputOptions(OutputTable, old, new)
		o.OutputFiles = []string{"json=" + filepath.Join(dir, "no", "such", "dir", "r.json")}
		_, _, err := runOutput(t, o)
		requirePlainError(t, err)
		require.ErrorContains(t, err, "--output-file json="+filepath.Join(dir, "no", "such", "dir", "r.json")+": open ")
	})
}

// TestFingerprintSurvivesRebase: a pull request's findings keep their
// fingerprints when the branch is rebased onto a main that moved the CRD to
// another file and reworded it, so a waiver or a review by fingerprint
// carries over; only their locations follow the file.
func TestFingerprintSurvivesRebase(t *testing.T) {
	const described = "        type: object\n        description: Widget is the demo operator's API.\n"
	gittest.NewRepo(t, func(dir string) {
		crd := strings.Replace(gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV1), "        type: object\n", described, 1)
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": crd})
		gittest.Git(t, dir, "commit", "-q", "-am", "main: describe widgets")
		gittest.Git(t, dir, "checkout", "-q", "-b", "feature")
		gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": strings.Replace(crd, gittest.WidgetsV1, gittest.WidgetsV2, 1)})
		gittest.Git(t, dir, "commit", "-q", "-am", "feature: drop small and color")
		gittest.Git(t, dir, "checkout", "-q", "main")
		gittest.Git(t, dir, "mv", "config/crds", "deploy")
		gittest.WriteFiles(t, dir, map[string]string{"deploy/widgets.yaml": strings.Replace(crd, "Widget is the demo operator's API.",
			"A Widget is one unit of work of the demo operator, reconciled by its controller.", 1)})
		gittest.Git(t, dir, "commit", "-q", "-am", "main: move the CRDs to deploy/, reword widgets")
		gittest.Git(t, dir, "checkout", "-q", "feature")
	})
	fingerprints := func(r report.Report) map[string]string {
		out := map[string]string{}
		for _, c := range r.CRDs {
			for _, f := range c.Findings {
				require.NotEmpty(t, f.Fingerprint)
				out[f.Check+" "+f.Field] = f.Fingerprint
			}
		}
		return out
	}

	before, _, err := gitRun(t, "main", "config/crds/")
	requireUnsafe(t, err)
	require.Equal(t, []string{
		"widgets.example.com existingFieldRemoval ^.spec.color @ config/crds/widgets.yaml:18 (was config/crds/widgets.yaml:20 at " + mergeBaseOf(t) + ")",
		"widgets.example.com enum ^.spec.size @ config/crds/widgets.yaml:20",
	}, findingsOf(before))

	gittest.Git(t, ".", "rebase", "-q", "main")
	after, _, err := gitRun(t, "main", "deploy/")
	requireUnsafe(t, err)
	require.Equal(t, []string{
		// After the rebase the merge base is main's tip, named as such.
		"widgets.example.com existingFieldRemoval ^.spec.color @ deploy/widgets.yaml:18 (was deploy/widgets.yaml:20 at main)",
		"widgets.example.com enum ^.spec.size @ deploy/widgets.yaml:20",
	}, findingsOf(after), "the same findings, at the CRD's new place")
	require.Equal(t, fingerprints(before), fingerprints(after))
	require.Len(t, fingerprints(after), 2)
}

// mergeBaseOf is the first 12 digits of the merge base of main and HEAD.
func mergeBaseOf(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(gittest.Git(t, ".", "merge-base", "main", "HEAD"))[:12]
}
