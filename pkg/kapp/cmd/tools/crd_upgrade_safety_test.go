package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/inputs"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
)

func td(name string) string { return filepath.Join("testdata", "crd-upgrade-safety", name) }

// run runs the command in-process with a JSON UI and returns the decoded
// JSON UI document and the command's error.
func run(t *testing.T, old, new []string, cluster evaluation.Cluster) (jsonResp, error) {
	t.Helper()
	return runWith(t, nil, old, new, cluster)
}

// runWith is run with options set by configure (when not nil).
func runWith(t *testing.T, configure func(*CRDUpgradeSafetyOptions), old, new []string, cluster evaluation.Cluster) (jsonResp, error) {
	t.Helper()
	var out bytes.Buffer
	confUI := ui.NewWrappingConfUI(ui.NewWriterUI(&out, &out, ui.NewNoopLogger()), ui.NewNoopLogger())
	confUI.EnableJSON()
	o := NewCRDUpgradeSafetyOptions(confUI, nil)
	o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: old, NewFiles: new}
	o.GlobalJSON = true
	if configure != nil {
		configure(o)
	}
	o.Cluster = func() (evaluation.Cluster, error) {
		if cluster == nil {
			t.Fatalf("cluster contacted although old CRDs came from files")
		}
		return cluster, nil
	}
	err := o.Run()
	confUI.Flush()
	var resp jsonResp
	if out.Len() > 0 {
		require.NoError(t, json.Unmarshal(out.Bytes(), &resp), out.String())
	}
	return resp, err
}

type jsonResp struct {
	Tables []struct {
		Content string
		Header  map[string]string
		Rows    []map[string]string
		Notes   []string
	}
	Lines []string
}

// rows returns the rows of the one table, each message's fingerprint
// suffix (" [fp:1a2b3c4d5e6f]", which every row must end with) moved to
// the key "fingerprint".
func (r jsonResp) rows(t *testing.T) []map[string]string {
	t.Helper()
	require.Len(t, r.Tables, 1)
	for _, row := range r.Tables[0].Rows {
		if _, done := row["fingerprint"]; done {
			continue
		}
		m := fpSuffix.FindStringSubmatchIndex(row["message"])
		require.NotNil(t, m, "a message without its fingerprint: %q", row["message"])
		row["fingerprint"] = row["message"][m[2]:m[3]]
		row["message"] = row["message"][:m[0]]
	}
	return r.Tables[0].Rows
}

// fpSuffix is how a table's message ends: with the finding's fingerprint.
var fpSuffix = regexp.MustCompile(` \[fp:([0-9a-f]{12})\]$`)

func checks(rows []map[string]string) []string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, r["crd"]+" "+r["version"]+" "+r["field"]+" "+r["check"]+" "+r["severity"])
	}
	return ids
}

func TestCRDUpgradeSafetyUnsafe(t *testing.T) {
	resp, err := run(t, []string{td("old.yaml")}, []string{td("new-unsafe.yaml")}, nil)

	requireUnsafe(t, err)
	require.Equal(t, "unsafe CRD upgrade: 2 error findings", err.Error())

	require.Equal(t, "findings", resp.Tables[0].Content)
	require.Equal(t, map[string]string{"crd": "CRD", "version": "Version", "field": "Field",
		"check": "Check", "severity": "Severity", "message": "Message", "remedy": "Way forward"}, resp.Tables[0].Header)
	require.Equal(t, []string{
		"widgets.example.com v1 ^.spec.color enum error",
		"widgets.example.com v1 ^.spec.size minimum error",
	}, checks(resp.rows(t)))
	for _, r := range resp.rows(t) {
		require.NotEmpty(t, r["message"])
	}
	require.Contains(t, resp.Lines, "1 CRD checked, 1 unsafe: 2 errors, 0 warnings")
}

func TestCRDUpgradeSafetySafe(t *testing.T) {
	// Also: a directory as input, a CRD only in the new files (created).
	resp, err := run(t, []string{td("old.yaml")}, []string{td("new-safe.yaml")}, nil)
	require.NoError(t, err)
	require.Empty(t, resp.rows(t))
	require.Contains(t, resp.Lines, "2 CRDs checked: no unsafe changes")
}

func TestCRDUpgradeSafetyConfig(t *testing.T) {
	t.Run("warn mode from a Config among the new files", func(t *testing.T) {
		resp, err := run(t, []string{td("old.yaml")}, []string{td("new-unsafe.yaml"), td("config-warn.yaml")}, nil)
		require.NoError(t, err)
		require.Equal(t, []string{
			"widgets.example.com v1 ^.spec.color enum warning",
			"widgets.example.com v1 ^.spec.size minimum warning",
		}, checks(resp.rows(t)))
		require.Contains(t, resp.Lines, "1 CRD checked, none unsafe: 0 errors, 2 warnings")
	})

	t.Run("Config among the old files is ignored", func(t *testing.T) {
		_, err := run(t, []string{td("old.yaml"), td("config-warn.yaml")}, []string{td("new-unsafe.yaml")}, nil)
		require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	})

	t.Run("maxFindingsPerCRD bounds the table, not the outcome", func(t *testing.T) {
		resp, err := run(t, []string{td("old.yaml")}, []string{td("new-unsafe.yaml"), td("config-max1.yaml")}, nil)
		require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
		require.Len(t, resp.rows(t), 1)
		require.Equal(t, []string{"... and 1 more finding for CRD widgets.example.com"}, resp.Tables[0].Notes)
		require.Contains(t, resp.Lines, "1 CRD checked, 1 unsafe: 2 errors, 0 warnings")
	})

	t.Run("invalid config value", func(t *testing.T) {
		_, err := run(t, []string{td("old.yaml")}, []string{td("new-safe.yaml"), td("config-bad.yaml")}, nil)
		requirePlainError(t, err)
		require.ErrorIs(t, err, config.ErrInvalidConfig)
		require.Contains(t, err.Error(), `setting preflight config "CRDUpgradeSafety"`)
		require.Contains(t, err.Error(), "mode")
	})

	t.Run("unknown preflight check name, as kapp deploy", func(t *testing.T) {
		_, err := run(t, []string{td("old.yaml")}, []string{td("new-safe.yaml"), td("config-unknown-check.yaml")}, nil)
		requirePlainError(t, err)
		require.Contains(t, err.Error(), `unknown preflight check in configuration: "CRDUpgradeSafty"`)
	})
}

func TestCRDUpgradeSafetyBadInput(t *testing.T) {
	cases := []struct {
		name     string
		old, new []string
		contains []string
	}{
		{name: "not YAML", old: []string{td("old.yaml")}, new: []string{td("not-yaml.yaml")},
			contains: []string{"new CRDs: file '" + td("not-yaml.yaml") + "' doc 1: invalid input: not valid YAML"}},
		{name: "not an object", old: []string{td("scalar.yaml")}, new: []string{td("new-safe.yaml")},
			contains: []string{"old CRDs: file '" + td("scalar.yaml") + "' doc 1: invalid input: expected a YAML object (a Kubernetes resource), got a string"}},
		{name: "duplicate in new", old: []string{td("old.yaml")}, new: []string{td("duplicate.yaml")},
			contains: []string{"duplicate CustomResourceDefinition widgets.example.com in new files",
				"'" + td("duplicate.yaml") + "' doc 1 and file '" + td("duplicate.yaml") + "' doc 2"}},
		{name: "duplicate across old files", old: []string{td("old.yaml"), td("new-safe.yaml")}, new: []string{td("new-safe.yaml")},
			contains: []string{"duplicate CustomResourceDefinition widgets.example.com in old files"}},
		{name: "undecodable CRD", old: []string{td("undecodable.yaml")}, new: []string{td("new-safe.yaml")},
			contains: []string{"decoding CustomResourceDefinition widgets.example.com"}},
		{name: "missing file", old: []string{td("old.yaml")}, new: []string{td("nope.yaml")},
			contains: []string{"nope.yaml"}},
		{name: "no --file2", old: []string{td("old.yaml")},
			contains: []string{"expected at least one --file2"}},
		{name: "no CRD in the new files", old: []string{td("old.yaml")}, new: []string{td("config-warn.yaml")},
			contains: []string{"no CRDs to check: the --file2 inputs (" + td("config-warn.yaml") + ") hold no apiextensions.k8s.io/v1 CustomResourceDefinition"}},
		{name: "stdin twice", old: []string{"-"}, new: []string{"-"},
			contains: []string{"standard input (-) at most once"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, tc.old, tc.new, nil)
			requirePlainError(t, err)
			for _, s := range tc.contains {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestCRDUpgradeSafetyNoOldCRDs: old inputs that hold no CRD (the wrong
// folder, an empty file) are an error naming them, as for --file2; they
// used to pass with "No unsafe changes".
func TestCRDUpgradeSafetyNoOldCRDs(t *testing.T) {
	emptyDir := t.TempDir()
	cases := []struct {
		name string
		old  []string
	}{
		{name: "only a kapp Config", old: []string{td("config-warn.yaml")}},
		{name: "an empty file", old: []string{td("empty.yaml")}},
		{name: "a folder without manifests", old: []string{emptyDir}},
		{name: "several inputs, none with a CRD", old: []string{td("empty.yaml"), td("config-warn.yaml")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, tc.old, []string{td("new-safe.yaml")}, nil)
			requirePlainError(t, err)
			require.ErrorIs(t, err, ErrNoCRDs)
			require.EqualError(t, err, "no CRDs to check: the --file inputs ("+strings.Join(tc.old, ", ")+
				") hold no apiextensions.k8s.io/v1 CustomResourceDefinition")
		})
	}
	t.Run("one old input without CRDs among others is fine", func(t *testing.T) {
		_, err := run(t, []string{td("old.yaml"), td("empty.yaml")}, []string{td("new-safe.yaml")}, nil)
		require.NoError(t, err)
	})
}

// TestCRDUpgradeSafetyRemovedCRD: a CRD in the old inputs and missing from
// the new ones is a crdDeletion finding (kapp would delete it), under the
// policy like any other finding.
func TestCRDUpgradeSafetyRemovedCRD(t *testing.T) {
	const message = "data loss: missing from the new inputs: kapp would delete the CRD with all its custom resources"
	old := []string{td("old.yaml"), td("sprockets.yaml")}

	resp, err := run(t, old, []string{td("new-safe.yaml")}, nil)
	requireUnsafe(t, err)
	require.Equal(t, []string{"sprockets.example.com   crdDeletion error"}, checks(resp.rows(t)))
	require.Equal(t, message, resp.rows(t)[0]["message"])
	require.Contains(t, resp.Lines, "3 CRDs checked, 1 unsafe: 1 error, 0 warnings")

	t.Run("warn mode", func(t *testing.T) {
		resp, err := run(t, old, []string{td("new-safe.yaml"), td("config-warn.yaml")}, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"sprockets.example.com   crdDeletion warning"}, checks(resp.rows(t)))
	})
	t.Run("crdDeletion disabled", func(t *testing.T) {
		resp, err := run(t, old, []string{td("new-safe.yaml"), td("config-no-deletion.yaml")}, nil)
		require.NoError(t, err)
		require.Empty(t, resp.rows(t))
		require.Contains(t, resp.Lines, "3 CRDs checked: no unsafe changes")
	})
	t.Run("new inputs of another release entirely", func(t *testing.T) {
		resp, err := run(t, []string{td("old.yaml")}, []string{td("sprockets.yaml")}, nil)
		requireUnsafe(t, err)
		require.Equal(t, []string{"widgets.example.com   crdDeletion error"}, checks(resp.rows(t)))
	})
}

func TestCRDUpgradeSafetyLive(t *testing.T) {
	oldSet, err := inputs.Load([]string{td("old.yaml")}, "old")
	require.NoError(t, err)
	live := oldSet.CRDs[0].CRD
	cluster := &fakeCluster{
		crds: map[string]*apiextv1.CustomResourceDefinition{live.Name: live},
		objs: []map[string]any{{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "blue-one", "namespace": "default"},
			"spec":     map[string]any{"size": int64(7), "color": "blue"},
		}},
	}
	resp, err := run(t, nil, []string{td("new-unsafe.yaml")}, cluster)
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	require.Equal(t, [][]string{{"widgets.example.com"}}, cluster.gets, "one batched fetch of the new CRDs' live versions")
	require.Equal(t, []string{"widgets.example.com v1"}, cluster.lists)
	// The stored object's impact is joined to the findings that cause it.
	require.NotContains(t, checks(resp.rows(t)), "widgets.example.com v1  existingResources error")
	require.Contains(t, resp.Lines, "1 CRD checked, 1 unsafe: 2 errors, 0 warnings; 1 stored object affected")
	require.Contains(t, fmt.Sprint(resp.rows(t)), `1 of 1 stored Widget rejected: default/blue-one (Unsupported value: "blue"`)

	t.Run("cluster errors fail the run", func(t *testing.T) {
		failing := &fakeCluster{getErr: errors.New("connection refused")}
		_, err := run(t, nil, []string{td("new-unsafe.yaml")}, failing)
		requirePlainError(t, err)
		require.Contains(t, err.Error(), "connection refused")
	})
}

// TestCRDUpgradeSafetyLiveChecksTimeout: the live comparison waits on the
// cluster at most liveChecksTimeout (5m by default), then fails (exit
// status 1) naming what was waiting.
func TestCRDUpgradeSafetyLiveChecksTimeout(t *testing.T) {
	oldSet, err := inputs.Load([]string{td("old.yaml")}, "old")
	require.NoError(t, err)
	live := oldSet.CRDs[0].CRD
	widget := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{"size": int64(7)}}

	t.Run("default", func(t *testing.T) {
		cluster := &fakeCluster{crds: map[string]*apiextv1.CustomResourceDefinition{live.Name: live}}
		start := time.Now()
		_, err := run(t, nil, []string{td("new-safe.yaml")}, cluster)
		require.NoError(t, err)
		require.Len(t, cluster.deadlines, 3, "the version, a GET and a LIST")
		for _, d := range cluster.deadlines {
			require.WithinRange(t, d, start.Add(config.DefaultLiveChecksTimeout), time.Now().Add(config.DefaultLiveChecksTimeout))
		}
	})

	t.Run("expiry", func(t *testing.T) {
		cluster := &fakeCluster{crds: map[string]*apiextv1.CustomResourceDefinition{live.Name: live},
			objs: []map[string]any{widget}, stallLists: true}
		_, err := run(t, nil, []string{td("new-safe.yaml"), td("config-timeout.yaml")}, cluster)
		requirePlainError(t, err)
		require.EqualError(t, err, "listing widgets of CRD widgets.example.com at version v1: "+
			"deadline of 50ms (liveChecksTimeout) exceeded after reading 1 page (1 custom resource)")
		require.ErrorIs(t, err, evaluation.ErrLiveChecksTimeout)
	})
}

// requireUnsafe checks err is the unsafe-upgrade error, exit status 3.
func requireUnsafe(t *testing.T, err error) {
	t.Helper()
	var unsafe *evaluation.UnsafeUpgradeError
	require.ErrorAs(t, err, &unsafe)
	require.ErrorIs(t, err, evaluation.ErrUnsafeUpgrade)
	var status cmdapp.ExitStatus
	require.ErrorAs(t, err, &status)
	require.Equal(t, 3, status.ExitStatus())
}

func requirePlainError(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var status cmdapp.ExitStatus
	require.False(t, errors.As(err, &status), "expected a plain error (exit status 1), got %T: %v", err, err)
	require.False(t, errors.Is(err, evaluation.ErrUnsafeUpgrade))
}

type fakeCluster struct {
	evaluation.Unsupported
	crds    map[string]*apiextv1.CustomResourceDefinition
	objs    []map[string]any
	getErr  error
	gets    [][]string
	lists   []string
	counts  []string
	dryRuns int
	// stallLists: after the objects, the LIST waits until its context ends.
	stallLists bool
	// deadlines of the contexts of every call (zero: none)
	deadlines []time.Time
	// version is the apiserver's minor version ("35"); "": 37.
	version string
}

func (f *fakeCluster) ServerVersion(ctx context.Context) (*version.Info, error) {
	f.recordDeadline(ctx)
	if f.version != "" {
		return &version.Info{Major: "1", Minor: f.version}, nil
	}
	return &version.Info{Major: "1", Minor: "37"}, nil
}

// DryRun counts: the tools command never dry-runs (read-only credentials
// are enough for it).
func (f *fakeCluster) DryRun(context.Context, evaluation.Verb, *unstructured.Unstructured) ([]string, error) {
	f.dryRuns++
	return nil, nil
}

func (f *fakeCluster) recordDeadline(ctx context.Context) {
	d, _ := ctx.Deadline()
	f.deadlines = append(f.deadlines, d)
}

func (f *fakeCluster) GetCRDs(ctx context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	f.recordDeadline(ctx)
	f.gets = append(f.gets, names)
	if f.getErr != nil {
		return nil, f.getErr
	}
	result := map[string]*apiextv1.CustomResourceDefinition{}
	for _, n := range names {
		if crd, ok := f.crds[n]; ok {
			result[n] = crd
		}
	}
	return result, nil
}

func (f *fakeCluster) ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func([]map[string]any) error) error {
	f.recordDeadline(ctx)
	f.lists = append(f.lists, crd.Name+" "+version)
	if err := fn(f.objs); err != nil || !f.stallLists {
		return err
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("Get \"https://127.0.0.1:6443/apis/example.com/v1/widgets\": %w", ctx.Err())
	case <-time.After(10 * time.Second):
		return errors.New("fakeCluster: nothing ended the wait (no deadline?)")
	}
}

func (f *fakeCluster) CountCustomResources(_ context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	f.counts = append(f.counts, crd.Name)
	return len(f.objs), nil
}

// TestCRDUpgradeSafetyCaseSensitiveKeys: a key that differs from a schema
// keyword only in case is an unknown field, as for the apiserver. Matched
// case-insensitively, "maxlength: 10" (YAML, keys sorted after conversion)
// or "MAXLENGTH": 10 (JSON, written last) overrode maxLength: 2 and hid the
// lowered bound: a false green.
func TestCRDUpgradeSafetyCaseSensitiveKeys(t *testing.T) {
	for _, file := range []string{"keys-new.yaml", "keys-new.json"} {
		t.Run(file, func(t *testing.T) {
			resp, err := run(t, []string{td("keys-old.yaml")}, []string{td(file)}, nil)
			requireUnsafe(t, err)
			require.Equal(t, []string{"widgets.example.com v1 ^.spec.name maxLength error"}, checks(resp.rows(t)))
			require.Contains(t, resp.rows(t)[0]["message"], "10 -> 2")
		})
	}
}

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		bytes, want int
	}{
		{0, 400},
		{smallInput - 1, 400},
		{smallInput, 100},
		{largeInput - 1, 100},
		{largeInput, 25},
		{hugeInput - 1, 25},
		{hugeInput, 100},
	} {
		require.Equal(t, tc.want, GCPercentFor(tc.bytes), "%d bytes", tc.bytes)
	}
	require.Zero(t, MemoryLimitFor(hugeInput-1))
	require.Equal(t, int64(7*hugeInput), MemoryLimitFor(hugeInput))
}

// The garbage collector's target is the command's while it runs, and the
// caller's again afterwards (the benchmarks and tests run it in process).
func TestCRDUpgradeSafetyRestoresGCPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	o := NewCRDUpgradeSafetyOptions(ui.NewNoopUI(), nil)
	o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: []string{td("old.yaml")}, NewFiles: []string{td("new-safe.yaml")}}
	require.NoError(t, o.Run())
	require.Equal(t, 77, debug.SetGCPercent(77), "the caller's target after Run")
}

// The soft memory limit too: set for large inputs only while the command
// runs, the caller's again afterwards.
func TestCRDUpgradeSafetyRestoresMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	o := NewCRDUpgradeSafetyOptions(ui.NewNoopUI(), nil)
	o.FileFlags = CRDUpgradeSafetyFileFlags{OldFiles: []string{td("old.yaml")}, NewFiles: []string{td("new-safe.yaml")}}
	require.NoError(t, o.Run())
	require.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1), "the caller's limit after Run")
}
