package evaluation

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	cluster := &objectsCluster{objs: []map[string]any{widget("a"), widget("b"), widget("c")}}
	crd := func(yaml string) *Pair {
		c := testcrd.MustCRD(t, yaml)
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

// objectsCluster serves objs in one page and accepts every dry run.
type objectsCluster struct {
	pagedCluster
	objs []map[string]any
}

func (c *objectsCluster) ListCustomResources(_ context.Context, _ *apiextv1.CustomResourceDefinition, _ string,
	fn func([]map[string]any) error) error {
	return fn(c.objs)
}
