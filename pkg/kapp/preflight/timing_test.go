package preflight

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestTiming: with KAPP_CRD_UPGRADE_SAFETY_TIMING=1, an evaluation prints
// its offline and live parts with the requests it made: every dry run,
// how many were in flight at once, the pages listed and the custom
// resources validated. Without it, nothing.
func TestTiming(t *testing.T) {
	var out bytes.Buffer
	defer func(f func() io.Writer) { timingOut = f }(timingOut)
	timingOut = func() io.Writer { return &out }

	widget := func(name string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"size": int64(2)}}
	}
	cluster := &fakeCluster{objs: []map[string]any{widget("a"), widget("b"), widget("c")}}
	crd := func(yaml string) *Pair {
		c, err := CRDFromResource(res(t, yaml))
		require.NoError(t, err)
		return &Pair{New: c, Send: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": c.Name}}}}
	}
	update, create := crd(safeCRD), crd(strings.ReplaceAll(oldCRD, "widget", "gadget"))
	update.Old = crd(oldCRD).New
	plan := Plan{Pairs: []Pair{*update, *create}}
	cfg := config.Default()
	_, err := Evaluate(context.Background(), plan, &cfg, cluster)
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^CRDUpgradeSafety timing: evaluate \d+ms \(offline \d+ms: 2 CRD changes, 0 removals; `+
		`live \d+ms: 2 server-side dry runs, at most [12] in flight; 1 LIST pages, 3 custom resources validated; 0 counts\)\n$`), out.String())

	out.Reset()
	timingOut = func() io.Writer { return nil }
	_, err = Evaluate(context.Background(), plan, &cfg, cluster)
	require.NoError(t, err)
	require.Empty(t, out.String())
}

// TestCheckTiming: a deploy's check prints its wall time with the bytes it
// allocated and the garbage collections they caused, the figures
// hack/bench-deploy.sh reports; they count what happened in between.
func TestCheckTiming(t *testing.T) {
	var out bytes.Buffer
	defer func(f func() io.Writer) { timingOut = f }(timingOut)
	timingOut = func() io.Writer { return &out }
	line := regexp.MustCompile(`(?m)^CRDUpgradeSafety timing: check \d+ms \(allocated (\d+\.\d) MiB, (\d+) garbage collections\)$`)

	check, _ := newCheck(t, &fakeCluster{}, nil)
	require.NoError(t, check.Run(context.Background(), deployGraph(t, "",
		[]ctlres.Resource{live(t, oldCRD)}, []ctlres.Resource{res(t, safeCRD)})))
	require.Regexp(t, line, out.String())

	out.Reset()
	timing := startCheckTiming(&out)
	sink = make([]byte, 64<<20) // large: counted at once, not in a per-CPU cache
	runtime.GC()
	timing.print()
	m := line.FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	allocated, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, allocated, 64.0, out.String())
	require.NotEqual(t, "0", m[2], out.String())
}

var sink []byte
