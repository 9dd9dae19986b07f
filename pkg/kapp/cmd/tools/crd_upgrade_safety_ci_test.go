package tools

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/internal/gittest"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

var repoRoot = filepath.Join("..", "..", "..", "..")

// codeBlock returns the fenced code block of doc whose first line is first.
func codeBlock(t *testing.T, doc, first string) string {
	t.Helper()
	for _, block := range strings.Split(doc, "```")[1:] {
		_, body, _ := strings.Cut(block, "\n") // after the info string
		if strings.HasPrefix(body, first) {
			return body
		}
	}
	t.Fatalf("docs/ci.md has no code block starting with %q", first)
	return ""
}

// ciRepos makes an upstream repository whose main branch holds the example
// Widget CRD of release 2 at config/crds/widgets.yaml and whose branch pr
// changes it to the unsafe release 3, and returns it with a clone of it
// checked out at pr.
func ciRepos(t *testing.T) (upstream, work string) {
	t.Helper()
	gittest.Env(t)
	// Fixed times: the same commits every run, as the outputs docs/ci.md
	// shows name them.
	t.Setenv("GIT_AUTHOR_DATE", "2026-11-01T12:00:00Z")
	t.Setenv("GIT_COMMITTER_DATE", "2026-11-01T12:00:00Z")
	ex := func(name string) string {
		data, err := os.ReadFile(filepath.Join(repoRoot, "examples", "crd-upgrade", name))
		require.NoError(t, err)
		return string(data)
	}
	upstream = filepath.Join(t.TempDir(), "upstream")
	require.NoError(t, os.Mkdir(upstream, 0o755))
	gittest.Git(t, upstream, "init", "-q", "-b", "main")
	gittest.WriteFiles(t, upstream, map[string]string{"config/crds/widgets.yaml": ex("crd-v2-safe.yaml")})
	gittest.Git(t, upstream, "add", ".")
	gittest.Git(t, upstream, "commit", "-q", "-m", "release 2")
	gittest.Git(t, upstream, "checkout", "-q", "-b", "pr")
	gittest.WriteFiles(t, upstream, map[string]string{"config/crds/widgets.yaml": ex("crd-v3-unsafe.yaml")})
	gittest.Git(t, upstream, "commit", "-q", "-am", "release 3")
	gittest.Git(t, upstream, "checkout", "-q", "main")

	work = filepath.Join(t.TempDir(), "work")
	gittest.Git(t, ".", "clone", "-q", "--branch", "pr", "file://"+upstream, work)
	return upstream, work
}

type result struct {
	status         int
	stdout, stderr string
}

// sh runs a script with bash as GitHub Actions runs a run: step (bash -e
// -o pipefail), with kapp on PATH.
func sh(t *testing.T, dir, bin, script string, env ...string) result {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		r.status = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

// TestCIDocs runs the recipes of docs/ci.md: the run: steps of the GitHub
// Actions workflow and the shell script, with the kapp built from this
// checkout, against a temporary repository whose branch makes the example
// CRD unsafe; and checks that the outputs the page shows are what they print.
func TestCIDocs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "ci.md"))
	require.NoError(t, err)
	doc := string(raw)
	bin := sharedKapp(t)

	t.Run("workflow", func(t *testing.T) {
		// Decoded as YAML 1.2, like GitHub ("on" is a key, not true), strictly.
		var wf struct {
			Name string `yaml:"name"`
			On   struct {
				PullRequest struct {
					Paths []string `yaml:"paths"`
				} `yaml:"pull_request"`
			} `yaml:"on"`
			Permissions map[string]string `yaml:"permissions"`
			Jobs        map[string]struct {
				RunsOn string `yaml:"runs-on"`
				Steps  []struct {
					Name string            `yaml:"name"`
					Uses string            `yaml:"uses"`
					With map[string]string `yaml:"with"`
					Run  string            `yaml:"run"`
					If   string            `yaml:"if"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		dec := yaml.NewDecoder(strings.NewReader(codeBlock(t, doc, "# .github/workflows/crd-upgrade-safety.yaml")))
		dec.KnownFields(true)
		require.NoError(t, dec.Decode(&wf))
		require.Equal(t, "write", wf.Permissions["security-events"], "upload-sarif needs it")
		require.Equal(t, []string{"config/crds/**"}, wf.On.PullRequest.Paths)
		require.Len(t, wf.Jobs, 1)

		_, work := ciRepos(t)
		summary := filepath.Join(t.TempDir(), "summary.md")
		runSteps := func() map[string]result {
			results := map[string]result{}
			for _, job := range wf.Jobs {
				for _, step := range job.Steps {
					switch {
					case strings.HasPrefix(step.Uses, "actions/checkout@"):
						require.Equal(t, "0", step.With["fetch-depth"], "--git-ref needs the base branch")
					case strings.HasPrefix(step.Uses, "github/codeql-action/upload-sarif@"):
						require.Equal(t, "always()", step.If)
						sarif := filepath.Join(work, step.With["sarif_file"])
						data, err := os.ReadFile(sarif)
						require.NoError(t, err, "the upload step reads what the SARIF step wrote")
						requireValid(t, filepath.Join("..", "..", "report", "testdata", "sarif-schema-2.1.0.json"), string(data))
					case strings.HasPrefix(step.Run, "go install "):
						// This checkout is built above instead: the package must be its kapp.
						require.Regexp(t, `^go install github\.com/crdsafety/kapp/cmd/kapp@\S+`, step.Run)
					case strings.Contains(step.Run, "kapp tools crd-upgrade-safety"):
						script := strings.ReplaceAll(step.Run, "${{ github.base_ref }}", "main")
						require.NotContains(t, script, "${{", "an expression the test does not know")
						results[step.Name] = sh(t, work, bin, script, "GITHUB_STEP_SUMMARY="+summary)
					}
				}
			}
			require.Len(t, results, 3)
			return results
		}

		r := runSteps()
		check := r["Check the CRDs against the base branch"]
		require.Equal(t, 3, check.status, "unsafe: the job fails\n%s%s", check.stdout, check.stderr)
		require.Equal(t, 0, r["Job summary"].status, r["Job summary"].stderr)
		require.Equal(t, 0, r["SARIF"].status, r["SARIF"].stderr)
		summaryText, err := os.ReadFile(summary)
		require.NoError(t, err)

		// The page shows what the steps print.
		require.Equal(t, codeBlock(t, doc, "::error "), check.stdout)
		quoted := doc[strings.Index(doc, "> **CRD upgrade safety**"):]
		quoted = quoted[:strings.Index(quoted, "\n\n")+1]
		require.Equal(t, regexp.MustCompile(`(?m)^> ?`).ReplaceAllString(quoted, ""), string(summaryText))

		t.Run("safe branch", func(t *testing.T) {
			gittest.Git(t, work, "checkout", "-q", "origin/main", "--", "config/crds/widgets.yaml")
			require.NoError(t, os.Remove(summary))
			for name, res := range runSteps() {
				require.Equal(t, 0, res.status, "%s: %s%s", name, res.stdout, res.stderr)
			}
		})
	})

	t.Run("shell script", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "crd-upgrade-safety.sh")
		require.NoError(t, os.WriteFile(script, []byte(codeBlock(t, doc, "#!/usr/bin/env bash")), 0o755))
		upstream, work := ciRepos(t)

		r := sh(t, work, bin, script+" 2>&1")
		require.Equal(t, 3, r.status, r.stdout)
		// The page shows what it prints (kapp pads its table with spaces).
		trailing := regexp.MustCompile(`(?m)[ \t]+$`)
		require.Equal(t, codeBlock(t, doc, "CRD upgrade safety findings"), trailing.ReplaceAllString(r.stdout, ""))

		t.Run("shallow clone: the base is fetched", func(t *testing.T) {
			shallow := filepath.Join(t.TempDir(), "shallow")
			gittest.Git(t, ".", "clone", "-q", "--depth", "1", "--single-branch", "--branch", "pr", "file://"+upstream, shallow)
			require.Error(t, exec.Command("git", "-C", shallow, "rev-parse", "--verify", "--quiet", "origin/main").Run())
			r := sh(t, shallow, bin, script)
			require.Equal(t, 3, r.status, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "Unsafe CRD changes against origin/main")
		})
		t.Run("safe", func(t *testing.T) {
			r := sh(t, work, bin, script, "CRDS=config/crds/widgets.yaml", "BASE_REF=origin/pr")
			require.Equal(t, 0, r.status, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "1 CRD checked: no unsafe changes\n")
			require.Contains(t, r.stdout, "CRD changes against origin/pr are safe.")
		})
		t.Run("could not run", func(t *testing.T) {
			r := sh(t, work, bin, script, "BASE_REF=origin/nope")
			require.Equal(t, 1, r.status, r.stdout+r.stderr)
			require.Contains(t, r.stderr, `unknown git revision "origin/nope"`)
			require.Contains(t, r.stdout, "could not run (exit status 1)")
		})
	})
}
