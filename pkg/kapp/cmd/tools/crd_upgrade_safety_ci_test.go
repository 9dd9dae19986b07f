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

// TestCIDocs runs the recipes of docs/ci.md: the two GitHub Actions
// workflows (with this repository's action, whose steps run from
// action.yml with a release of this checkout's kapp served from a local
// directory; and with one run of kapp writing several outputs), the
// pre-commit configuration (the hook's entry from .pre-commit-hooks.yaml)
// and the shell script, with the kapp built from this checkout, against a
// temporary repository whose branch makes the example CRD unsafe; and
// checks that the outputs the page shows are what they print (-update
// rewrites those of the action in docs/ci.md).
func TestCIDocs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "ci.md"))
	require.NoError(t, err)
	doc := string(raw)
	bin := sharedKapp(t)

	docPath := filepath.Join(repoRoot, "docs", "ci.md")
	a := readAction(t)

	// runWorkflow runs the steps of the workflow in the code block of
	// docs/ci.md that starts with first in work, as GitHub would on a pull
	// request from its branch pr to main: the action's steps (action.yml)
	// for a uses: of this repository, the run: steps with bash; the
	// upload-sarif step reads what the others wrote. It returns what each
	// step printed (by name) and the job summary.
	runWorkflow := func(t *testing.T, first, upstream, work string) (map[string]result, string) {
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
					ID   string            `yaml:"id"`
					Name string            `yaml:"name"`
					Uses string            `yaml:"uses"`
					With map[string]string `yaml:"with"`
					Run  string            `yaml:"run"`
					If   string            `yaml:"if"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		dec := yaml.NewDecoder(strings.NewReader(codeBlock(t, doc, first)))
		dec.KnownFields(true)
		require.NoError(t, dec.Decode(&wf))
		require.Equal(t, "write", wf.Permissions["security-events"], "upload-sarif needs it")
		require.Equal(t, []string{"config/crds/**"}, wf.On.PullRequest.Paths)
		require.Len(t, wf.Jobs, 1)

		summary := filepath.Join(t.TempDir(), "summary.md")
		results := map[string]result{}
		stepOutputs := map[string]map[string]string{}
		var summaryText string
		for _, job := range wf.Jobs {
			for _, step := range job.Steps {
				switch {
				case strings.HasPrefix(step.Uses, "actions/checkout@"):
					require.Equal(t, "0", step.With["fetch-depth"], "the merge base needs the history")
				case strings.HasPrefix(step.Uses, "crdsafety/kapp@"):
					// This checkout's action, with a release of this checkout's
					// kapp served from a local directory.
					version := strings.TrimPrefix(step.Uses, "crdsafety/kapp@")
					require.Equal(t, "v1.0.0", version)
					with := map[string]string{"release-url": serveRelease(t, version).url}
					for k, v := range step.With {
						with[k] = v
					}
					run := runAction(t, a, work, with, prGitHub(t, upstream, version))
					results[step.ID] = run.steps["check"]
					require.Equal(t, 0, run.steps["install"].status, run.steps["install"].stdout)
					stepOutputs[step.ID] = run.outputs
					summaryText += run.summary
				case strings.HasPrefix(step.Uses, "github/codeql-action/upload-sarif@"):
					require.Equal(t, "always()", step.If)
					file := step.With["sarif_file"]
					if m := regexp.MustCompile(`^\$\{\{ steps\.([\w-]+)\.outputs\.sarif-file \}\}$`).FindStringSubmatch(file); m != nil {
						file = stepOutputs[m[1]]["sarif-file"]
					}
					require.NotContains(t, file, "${{", "an expression the test does not know")
					data, err := os.ReadFile(filepath.Join(work, file))
					require.NoError(t, err, "the upload step reads what the check wrote")
					requireValid(t, filepath.Join("..", "..", "report", "testdata", "sarif-schema-2.1.0.json"), string(data))
				case strings.HasPrefix(step.Uses, "actions/setup-go@"):
					// Go is here: it builds the kapp of this checkout (below).
				case strings.HasPrefix(step.Run, "go install "):
					// This checkout is built above instead: the package must be its kapp.
					require.Regexp(t, `^go install github\.com/crdsafety/kapp/cmd/kapp@\S+`, step.Run)
				case strings.Contains(step.Run, "kapp tools crd-upgrade-safety"):
					script := strings.ReplaceAll(step.Run, "${{ github.base_ref }}", "main")
					require.NotContains(t, script, "${{", "an expression the test does not know")
					results[step.Name] = sh(t, work, bin, script, "GITHUB_STEP_SUMMARY="+summary)
				default:
					t.Fatalf("a step the test does not know: %+v", step)
				}
			}
		}
		if data, err := os.ReadFile(summary); err == nil {
			summaryText += string(data)
		}
		return results, summaryText
	}

	t.Run("workflow with the action", func(t *testing.T) {
		upstream, work := ciRepos(t)
		r, summary := runWorkflow(t, "# .github/workflows/crd-upgrade-safety.yaml\n", upstream, work)
		require.Len(t, r, 1)
		check := r["crd-upgrade-safety"]
		require.Equal(t, 3, check.status, "unsafe: the job fails\n%s%s", check.stdout, check.stderr)

		// The page shows what the step prints, and the job summary.
		quoted := doc[strings.Index(doc, "> **CRD upgrade safety**"):]
		quoted = quoted[:strings.Index(quoted, "\n\n")+1]
		if *update {
			doc = strings.Replace(doc, codeBlock(t, doc, "::error "), check.stdout, 1)
			doc = strings.Replace(doc, quoted, regexp.MustCompile(`(?m)^`).ReplaceAllString(strings.TrimSuffix(summary, "\n"), "> ")+"\n", 1)
			doc = regexp.MustCompile(`(?m)^> $`).ReplaceAllString(doc, ">")
			require.NoError(t, os.WriteFile(docPath, []byte(doc), 0o644))
			return
		}
		require.Equal(t, codeBlock(t, doc, "::error "), check.stdout)
		require.Equal(t, regexp.MustCompile(`(?m)^> ?`).ReplaceAllString(quoted, ""), summary)

		t.Run("safe branch", func(t *testing.T) {
			gittest.Git(t, work, "checkout", "-q", "origin/main", "--", "config/crds/widgets.yaml")
			r, summary := runWorkflow(t, "# .github/workflows/crd-upgrade-safety.yaml\n", upstream, work)
			require.Equal(t, 0, r["crd-upgrade-safety"].status, r["crd-upgrade-safety"].stdout)
			require.Contains(t, summary, "no unsafe changes")
		})
	})

	t.Run("workflow without the action", func(t *testing.T) {
		upstream, work := ciRepos(t)
		first := "# .github/workflows/crd-upgrade-safety.yaml, without the action\n"
		r, summary := runWorkflow(t, first, upstream, work)
		require.Len(t, r, 1, "one run")
		check := r["Check the CRDs against the base branch"]
		require.Equal(t, 3, check.status, "unsafe: the job fails\n%s%s", check.stdout, check.stderr)
		require.Equal(t, 4, strings.Count(check.stdout, "::error "), check.stdout)
		require.Contains(t, check.stdout, "1 CRD checked against origin/main (")
		require.Contains(t, summary, "**CRD upgrade safety**: 1 CRD checked against origin/main (")

		t.Run("safe branch", func(t *testing.T) {
			gittest.Git(t, work, "checkout", "-q", "origin/main", "--", "config/crds/widgets.yaml")
			r, summary := runWorkflow(t, first, upstream, work)
			require.Equal(t, 0, r["Check the CRDs against the base branch"].status)
			require.Contains(t, summary, "no unsafe changes")
		})
	})

	t.Run("pre-commit", func(t *testing.T) {
		var cfg struct {
			Repos []struct {
				Repo  string `yaml:"repo"`
				Rev   string `yaml:"rev"`
				Hooks []struct {
					ID   string   `yaml:"id"`
					Args []string `yaml:"args"`
				} `yaml:"hooks"`
			} `yaml:"repos"`
		}
		dec := yaml.NewDecoder(strings.NewReader(codeBlock(t, doc, "# .pre-commit-config.yaml")))
		dec.KnownFields(true)
		require.NoError(t, dec.Decode(&cfg))
		require.Len(t, cfg.Repos, 1)
		require.Equal(t, "https://github.com/crdsafety/kapp", cfg.Repos[0].Repo)
		raw, err := os.ReadFile(filepath.Join(repoRoot, ".pre-commit-hooks.yaml"))
		require.NoError(t, err)
		var hooks []preCommitHook
		require.NoError(t, yaml.Unmarshal(raw, &hooks))
		for _, use := range cfg.Repos[0].Hooks {
			var hook *preCommitHook
			for i := range hooks {
				if hooks[i].ID == use.ID {
					hook = &hooks[i]
				}
			}
			require.NotNil(t, hook, "the page uses a hook .pre-commit-hooks.yaml does not define: %s", use.ID)
			args := hook.Args
			if use.Args != nil {
				args = use.Args // pre-commit: the config's args replace the hook's
			}
			argv := strings.Fields(hook.Entry)
			script := "kapp " + strings.Join(append(argv[1:], args...), " ")

			// HEAD: the safe release 2; staged: the unsafe release 3.
			_, work := ciRepos(t)
			gittest.Git(t, work, "checkout", "-q", "origin/main")
			gittest.Git(t, work, "checkout", "-q", "pr", "--", "config/crds/widgets.yaml")
			r := sh(t, work, bin, script)
			require.Equal(t, 3, r.status, "an unsafe change staged\n%s%s", r.stdout, r.stderr)
			require.Contains(t, r.stdout, "widgets.demo.example.com  v1       ^.spec.color     existingFieldRemoval  error     data loss: existing field removed (was string)")
			require.Contains(t, r.stderr, "kapp: Error: unsafe CRD upgrade: 4 error findings")

			gittest.Git(t, work, "checkout", "-q", "HEAD", "--", "config/crds/widgets.yaml")
			r = sh(t, work, bin, script)
			require.Equal(t, 0, r.status, "nothing unsafe staged\n%s%s", r.stdout, r.stderr)
			require.Contains(t, r.stdout, "1 CRD checked against HEAD (")
		}
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
			require.Contains(t, r.stdout, "1 CRD checked against origin/pr (ee7280d): no unsafe changes\n")
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
