package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/gittest"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// The tests of the GitHub Action (action.yml, whose steps are
// action/run.sh) and of the pre-commit hooks (.pre-commit-hooks.yaml):
// run as GitHub and pre-commit run them, with the kapp built from this
// checkout, against temporary repositories.

var (
	kappOnce sync.Once
	kappDir  string
	kappErr  error
)

// TestMain removes what sharedKapp built.
func TestMain(m *testing.M) {
	code := m.Run()
	if kappDir != "" {
		os.RemoveAll(kappDir)
	}
	os.Exit(code)
}

// sharedKapp builds cmd/kapp once for the package's tests and returns the
// directory that holds it (removed by TestMain).
func sharedKapp(t *testing.T) string {
	t.Helper()
	kappOnce.Do(func() {
		if kappDir, kappErr = os.MkdirTemp("", "crd-upgrade-safety-kapp-"); kappErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(kappDir, "kapp"), "github.com/crdsafety/kapp/cmd/kapp").CombinedOutput()
		if err != nil {
			kappErr = fmt.Errorf("building kapp: %w: %s", err, out)
		}
	})
	require.NoError(t, kappErr)
	return kappDir
}

// action is action.yml, decoded strictly.
type action struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    map[string]string
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			Name  string            `yaml:"name"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
			Run   string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func readAction(t *testing.T) action {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	require.NoError(t, err)
	var a action
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&a))
	require.Equal(t, "composite", a.Runs.Using)
	return a
}

// release is a release of this checkout's kapp served as GitHub serves
// release assets: its binary for this machine and checksums.txt, as
// hack/release.sh writes them.
type release struct {
	url, dir, bin string
}

func serveRelease(t *testing.T, version string) release {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		// GitHub's runners have it; the action downloads with it.
		t.Skipf("the action's install step downloads with curl, which this machine lacks: %v", err)
	}
	kapp, err := os.ReadFile(filepath.Join(sharedKapp(t), "kapp"))
	require.NoError(t, err)
	root := t.TempDir()
	dir := filepath.Join(root, "crdsafety", "kapp", "releases", "download", version)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	bin := "kapp-" + runtime.GOOS + "-" + runtime.GOARCH
	other := "kapp-windows-amd64.exe"
	var sums strings.Builder
	for name, data := range map[string][]byte{bin: kapp, other: []byte("another platform")} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	for _, name := range []string{bin, other} { // sha256sum's format, sorted
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o644))
	srv := httptest.NewServer(http.FileServer(http.Dir(root)))
	t.Cleanup(srv.Close)
	return release{url: srv.URL + "/crdsafety/kapp/releases/download", dir: dir, bin: bin}
}

// actionRun is the outcome of the action's steps.
type actionRun struct {
	steps   map[string]result // by step id, those that ran
	outputs map[string]string // the action's outputs
	summary string            // the job summary written
}

// runAction runs the action's steps as GitHub runs a composite action:
// each step's env with its expressions evaluated (the inputs from with
// and the defaults, the github context of a pull_request event, the
// outputs of earlier steps), then its run: with bash in dir, stopping at
// the first step that fails.
func runAction(t *testing.T, a action, dir string, with map[string]string, github map[string]string) actionRun {
	t.Helper()
	for name := range with {
		require.Contains(t, a.Inputs, name, "with: names an input the action does not have")
	}
	summary := filepath.Join(t.TempDir(), "step_summary")
	temp := t.TempDir()
	actionPath, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	stepOutputs := map[string]map[string]string{}
	var eval func(s string) string
	lookup := func(expr string) string {
		for _, alt := range strings.Split(expr, "||") {
			alt = strings.TrimSpace(alt)
			var v string
			switch {
			case strings.HasPrefix(alt, "inputs."):
				name := strings.TrimPrefix(alt, "inputs.")
				in, ok := a.Inputs[name]
				require.True(t, ok, "an expression names no input: %s", alt)
				var given bool
				if v, given = with[name]; !given {
					v = eval(in.Default)
				}
			case strings.HasPrefix(alt, "steps."):
				parts := strings.Split(alt, ".") // steps.<id>.outputs.<name>
				require.Len(t, parts, 4, alt)
				v = stepOutputs[parts[1]][parts[3]]
			case strings.HasPrefix(alt, "github."):
				var ok bool
				v, ok = github[strings.TrimPrefix(alt, "github.")]
				require.True(t, ok, "an expression the test does not know: %s", alt)
			default:
				t.Fatalf("an expression the test does not know: %s", alt)
			}
			if v != "" {
				return v
			}
		}
		return ""
	}
	exprRe := regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
	eval = func(s string) string {
		return exprRe.ReplaceAllStringFunc(s, func(m string) string { return lookup(exprRe.FindStringSubmatch(m)[1]) })
	}

	run := actionRun{steps: map[string]result{}, outputs: map[string]string{}}
	for _, step := range a.Runs.Steps {
		require.Equal(t, "bash", step.Shell)
		require.NotContains(t, step.Run, "${{", "expressions go through env:, not into the script")
		outFile := filepath.Join(t.TempDir(), "output")
		env := []string{
			"GITHUB_ACTION_PATH=" + actionPath, "GITHUB_ACTIONS=true", "CI=true",
			"GITHUB_OUTPUT=" + outFile, "GITHUB_STEP_SUMMARY=" + summary,
			"GITHUB_EVENT_NAME=pull_request", "GITHUB_WORKSPACE=" + dir, "GITHUB_BASE_REF=" + github["base_ref"],
			"RUNNER_OS=" + map[string]string{"linux": "Linux", "darwin": "macOS", "windows": "Windows"}[runtime.GOOS],
			"RUNNER_ARCH=" + map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH],
			"RUNNER_TEMP=" + temp,
		}
		for k, v := range step.Env {
			env = append(env, k+"="+eval(v))
		}
		// Not on PATH: the action must use the kapp it installed.
		r := sh(t, dir, t.TempDir(), step.Run, env...)
		run.steps[step.ID] = r
		outs := map[string]string{}
		if data, err := os.ReadFile(outFile); err == nil {
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					outs[k] = v
				}
			}
		}
		stepOutputs[step.ID] = outs
		if r.status != 0 {
			break
		}
	}
	for name, out := range a.Outputs {
		run.outputs[name] = eval(out.Value)
	}
	if data, err := os.ReadFile(summary); err == nil {
		run.summary = string(data)
	}
	return run
}

// prGitHub is the github context of a pull_request event on the
// repositories of ciRepos, for the action used at version.
func prGitHub(t *testing.T, upstream, version string) map[string]string {
	return map[string]string{
		"action_ref":                  version,
		"base_ref":                    "main",
		"event.pull_request.base.sha": strings.TrimSpace(gittest.Git(t, upstream, "rev-parse", "main")),
	}
}

// TestCIAction runs the action's steps on a pull request that makes the
// example CRD unsafe: the release binary downloaded and checked against
// the release's checksums, then one run writing annotations, the job
// summary and SARIF.
func TestCIAction(t *testing.T) {
	a := readAction(t)
	rel := serveRelease(t, "v1.0.0")
	upstream, work := ciRepos(t)
	github := prGitHub(t, upstream, "v1.0.0")
	with := map[string]string{"release-url": rel.url}

	r := runAction(t, a, work, with, github)
	install, check := r.steps["install"], r.steps["check"]
	require.Equal(t, 0, install.status, install.stdout+install.stderr)
	require.Contains(t, install.stdout, rel.bin+": OK", "sha256sum checked it")
	require.Equal(t, 3, check.status, "unsafe: the step fails\n%s%s", check.stdout, check.stderr)
	require.Regexp(t, `(?m)^::error file=config/crds/widgets.yaml,line=25,title=existingFieldRemoval in widgets.demo.example.com::`, check.stdout)
	require.Equal(t, 4, strings.Count(check.stdout, "::error "), check.stdout)
	require.Contains(t, check.stdout, "1 CRD checked against "+github["event.pull_request.base.sha"][:7]+", 1 unsafe: 4 errors, 0 warnings\n")
	require.Contains(t, r.summary, "**CRD upgrade safety**: 1 CRD checked against ")
	require.Contains(t, r.summary, "| **error** | v1 | `^.spec.color` |")
	require.Equal(t, "crd-upgrade-safety.sarif", r.outputs["sarif-file"])
	sarif, err := os.ReadFile(filepath.Join(work, r.outputs["sarif-file"]))
	require.NoError(t, err)
	requireValid(t, filepath.Join("..", "..", "report", "testdata", "sarif-schema-2.1.0.json"), string(sarif))
	require.Equal(t, 4, strings.Count(string(sarif), `"ruleId"`))

	t.Run("mode warn: reported, the step passes", func(t *testing.T) {
		r := runAction(t, a, work, map[string]string{"release-url": rel.url, "mode": "warn", "sarif-file": "out.sarif"}, github)
		check := r.steps["check"]
		require.Equal(t, 0, check.status, check.stdout+check.stderr)
		require.Contains(t, check.stdout, "::warning title=CRD upgrade safety::unsafe CRD changes (mode warn: the step passes)")
		require.Equal(t, "out.sarif", r.outputs["sarif-file"])
	})
	t.Run("base-ref a branch name, several baselines, tip", func(t *testing.T) {
		r := runAction(t, a, work, map[string]string{"release-url": rel.url, "base-ref": "main\norigin/pr", "baseline": "tip"}, github)
		check := r.steps["check"]
		require.Equal(t, 3, check.status, check.stdout+check.stderr)
		require.Contains(t, check.stdout, "1 CRD checked against origin/main (")
		require.Contains(t, check.stdout, " and origin/pr (")
	})
	t.Run("could not run: no sarif-file output", func(t *testing.T) {
		r := runAction(t, a, work, map[string]string{"release-url": rel.url, "files": "no/such/dir"}, github)
		check := r.steps["check"]
		require.Equal(t, 1, check.status, check.stdout+check.stderr)
		require.Empty(t, r.outputs["sarif-file"])
	})
	t.Run("a shallow clone (actions/checkout's default depth)", func(t *testing.T) {
		// main moves on after the pull request's base: fetched, the base
		// commit and the merge base come with the history.
		shallow := filepath.Join(t.TempDir(), "shallow")
		gittest.Git(t, ".", "clone", "-q", "--depth", "1", "--single-branch", "--branch", "pr", "file://"+upstream, shallow)
		r := runAction(t, a, shallow, with, github)
		check := r.steps["check"]
		require.Equal(t, 3, check.status, check.stdout+check.stderr)
		require.Contains(t, check.stdout, "Fetching the history of this shallow clone, for the merge base\n")
		require.Contains(t, check.stdout, "1 CRD checked against "+github["event.pull_request.base.sha"][:7]+", 1 unsafe: 4 errors, 0 warnings\n")
	})
	t.Run("a safe pull request", func(t *testing.T) {
		gittest.Git(t, work, "checkout", "-q", "origin/main", "--", "config/crds/widgets.yaml")
		t.Cleanup(func() { gittest.Git(t, work, "checkout", "-q", "HEAD", "--", "config/crds/widgets.yaml") })
		r := runAction(t, a, work, with, github)
		require.Equal(t, 0, r.steps["check"].status, r.steps["check"].stdout+r.steps["check"].stderr)
		require.Contains(t, r.summary, "no unsafe changes")
	})
	t.Run("a binary that does not match checksums.txt is not run", func(t *testing.T) {
		corrupt := serveRelease(t, "v1.0.1")
		f, err := os.OpenFile(filepath.Join(corrupt.dir, corrupt.bin), os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write([]byte{0})
		require.NoError(t, err)
		require.NoError(t, f.Close())

		r := runAction(t, a, work, map[string]string{"release-url": corrupt.url}, prGitHub(t, upstream, "v1.0.1"))
		install := r.steps["install"]
		require.Equal(t, 1, install.status, install.stdout+install.stderr)
		require.Contains(t, install.stdout, corrupt.bin+": FAILED")
		require.Contains(t, install.stdout, "::error title=CRD upgrade safety::"+corrupt.bin+" of v1.0.1 does not match the release's checksums.txt: not run")
		require.NotContains(t, r.steps, "check", "the check does not run")
	})
	t.Run("a version that is no release tag", func(t *testing.T) {
		r := runAction(t, a, work, map[string]string{"release-url": rel.url}, prGitHub(t, upstream, "main"))
		require.Equal(t, 1, r.steps["install"].status)
		require.Contains(t, r.steps["install"].stdout, "version: expected a release tag (vMAJOR.MINOR.PATCH), got 'main'")
	})
}

// preCommitHook is an entry of .pre-commit-hooks.yaml.
type preCommitHook struct {
	ID            string   `yaml:"id"`
	Name          string   `yaml:"name"`
	Description   string   `yaml:"description"`
	Entry         string   `yaml:"entry"`
	Args          []string `yaml:"args"`
	Language      string   `yaml:"language"`
	Files         string   `yaml:"files"`
	PassFilenames *bool    `yaml:"pass_filenames"`
}

// TestPreCommitHooks runs each hook's entry as pre-commit runs it (the
// entry split as a shell would, then its args; no file names; from the
// repository's top directory) on a repository with a staged CRD change.
func TestPreCommitHooks(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".pre-commit-hooks.yaml"))
	require.NoError(t, err)
	var hooks []preCommitHook
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&hooks))
	require.Len(t, hooks, 2)
	bin := sharedKapp(t)

	for _, hook := range hooks {
		t.Run(hook.ID, func(t *testing.T) {
			require.Contains(t, []string{"golang", "system"}, hook.Language)
			require.NotNil(t, hook.PassFilenames)
			require.False(t, *hook.PassFilenames, "the folder is checked as a whole (args), not the staged files one by one")
			files := regexp.MustCompile(hook.Files)
			require.True(t, files.MatchString("config/crds/widgets.yaml"))
			require.False(t, files.MatchString("main.go"))
			require.NotContains(t, hook.Entry, `"`, "split on spaces here")
			argv := strings.Fields(hook.Entry)
			require.Equal(t, "kapp", argv[0], "the binary pre-commit installs (golang) or finds on PATH (system)")
			script := "kapp " + strings.Join(append(argv[1:], hook.Args...), " ")

			dir := gittest.NewRepo(t, nil)
			t.Run("a staged unsafe change fails, naming the finding", func(t *testing.T) {
				gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
				gittest.Git(t, dir, "add", "config/crds/widgets.yaml")
				r := sh(t, dir, bin, script)
				require.Equal(t, 3, r.status, r.stdout+r.stderr)
				require.Contains(t, r.stdout, "existingFieldRemoval")
				require.Contains(t, r.stdout, "data loss: existing field removed (was string)")
				require.Contains(t, r.stdout, "2 CRDs checked against HEAD (")
				require.Contains(t, r.stderr, "unsafe CRD upgrade: 2 error findings")
			})
			t.Run("the work tree's unsafe change is not what is committed", func(t *testing.T) {
				// Staged: safe (a new optional field); on disk: unsafe.
				gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget",
					"{size: {type: string, enum: [small, large]}, color: {type: string}, shape: {type: string}}")})
				gittest.Git(t, dir, "add", "config/crds/widgets.yaml")
				gittest.WriteFiles(t, dir, map[string]string{"config/crds/widgets.yaml": gittest.CRDYAML("widgets", "Widget", gittest.WidgetsV2)})
				r := sh(t, dir, bin, script)
				require.Equal(t, 0, r.status, r.stdout+r.stderr)
				require.Contains(t, r.stdout, "2 CRDs checked against HEAD (")
				require.Contains(t, r.stdout, "no unsafe changes")
			})
		})
	}
}
