package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// conversionFiles writes the widgets CRD (old and new alike: the
// conversion code is what changes) and the sample widgets, and returns
// their paths.
func conversionFiles(t *testing.T) (crd, objects string) {
	t.Helper()
	dir := t.TempDir()
	crd = filepath.Join(dir, "crd.yaml")
	require.NoError(t, os.WriteFile(crd, conversiontest.WidgetsYAML(), 0o600))
	var docs []string
	for _, w := range conversiontest.Widgets() {
		b, err := yaml.Marshal(w.Object)
		require.NoError(t, err)
		docs = append(docs, string(b))
	}
	objects = filepath.Join(dir, "widgets.yaml")
	require.NoError(t, os.WriteFile(objects, []byte(strings.Join(docs, "---\n")), 0o600))
	return crd, objects
}

// withConversionWebhook starts h and points the command's flags at it.
func withConversionWebhook(t *testing.T, h *conversiontest.Hook, objects string) func(*CRDUpgradeSafetyOptions) {
	served := conversiontest.Serve(t, h)
	cc := served.Spec.Conversion.Webhook.ClientConfig
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, cc.CABundle, 0o600))
	return func(o *CRDUpgradeSafetyOptions) {
		o.FileFlags.Objects = []string{objects}
		o.ConversionFlags = CRDUpgradeSafetyConversionFlags{WebhookURL: *cc.URL, WebhookCAFile: ca}
	}
}

func conversionRows(t *testing.T, resp jsonResp) []string {
	var out []string
	for _, r := range resp.rows(t) {
		if r["check"] == "conversionWebhook" {
			out = append(out, r["severity"]+" "+r["version"]+" "+r["field"]+": "+r["message"])
		}
	}
	return out
}

// TestCRDUpgradeSafetyConversionWebhook: the CI command probes a
// conversion webhook run locally (--conversion-webhook-url, its CA) with
// the --objects samples: a lossy one is blocked naming the field and the
// objects, a failing one naming the objects, a lossless one passes.
func TestCRDUpgradeSafetyConversionWebhook(t *testing.T) {
	crd, objects := conversionFiles(t)
	t.Run("lossless: passes", func(t *testing.T) {
		resp, err := runWith(t, withConversionWebhook(t, &conversiontest.Hook{}, objects), []string{crd}, []string{crd}, nil)
		require.NoError(t, err)
		require.Empty(t, conversionRows(t, resp))
	})
	t.Run("lossy: blocked, the field and the objects named", func(t *testing.T) {
		resp, err := runWith(t, withConversionWebhook(t, &conversiontest.Hook{Lossy: true}, objects), []string{crd}, []string{crd}, nil)
		requireUnsafe(t, err)
		rows := conversionRows(t, resp)
		require.Len(t, rows, 2, rows)
		require.Contains(t, rows[0], "error v1 ^.spec.color: data loss: the new conversion webhook loses this field on a round trip (v1 -> v2 -> v1)")
		require.Contains(t, rows[0], "1 of 4 sample Widgets loses it: ns/a")
		require.Contains(t, rows[1], "2 of 4 sample Widgets lose it: ns/b, ns/d")
	})
	t.Run("failing on an object: blocked, the object named", func(t *testing.T) {
		resp, err := runWith(t, withConversionWebhook(t, &conversiontest.Hook{FailLabel: true}, objects), []string{crd}, []string{crd}, nil)
		requireUnsafe(t, err)
		rows := conversionRows(t, resp)
		require.NotEmpty(t, rows)
		require.Contains(t, rows[0], "refuses to convert stored objects from v1 to v2")
		require.Contains(t, rows[0], "ns/c (result: cannot unmarshal spec.size of c)")
	})
	t.Run("without the flag nothing is probed offline", func(t *testing.T) {
		resp, err := runWith(t, func(o *CRDUpgradeSafetyOptions) { o.FileFlags.Objects = []string{objects} }, []string{crd}, []string{crd}, nil)
		require.NoError(t, err)
		require.Empty(t, conversionRows(t, resp))
	})
	t.Run("a CA file without a URL is an error", func(t *testing.T) {
		_, err := runWith(t, func(o *CRDUpgradeSafetyOptions) { o.ConversionFlags.WebhookCAFile = "ca.pem" }, []string{crd}, []string{crd}, nil)
		require.ErrorContains(t, err, "expected --conversion-webhook-ca-file with --conversion-webhook-url")
	})
	t.Run("http is refused", func(t *testing.T) {
		_, err := runWith(t, func(o *CRDUpgradeSafetyOptions) { o.ConversionFlags.WebhookURL = "http://127.0.0.1:9443/convert" }, []string{crd}, []string{crd}, nil)
		require.ErrorContains(t, err, "over https only")
	})
}

// Against the cluster, the command probes the webhook the new CRD names
// with the stored objects; behind a Service, through the service proxy.
func TestCRDUpgradeSafetyConversionWebhookLive(t *testing.T) {
	old := conversiontest.WidgetsCRD(t)
	newCRD := old.DeepCopy()
	newCRD.Spec.Conversion = evaluationtest.ConversionService("operators", "widget-converter")
	b, err := yaml.Marshal(newCRD)
	require.NoError(t, err)
	newFile := filepath.Join(t.TempDir(), "new.yaml")
	require.NoError(t, os.WriteFile(newFile, b, 0o600))
	var objs []map[string]any
	for _, w := range conversiontest.Widgets() {
		objs = append(objs, w.Object)
	}
	cluster := &evaluationtest.Cluster{Objs: objs, CRDs: evaluationtest.CRDsNamed(nil, nil),
		Services: evaluationtest.Handlers(map[string]conversiontest.Hook{"operators/widget-converter": {Lossy: true}})}
	cluster.CRDs[old.Name] = old
	resp, err := runWith(t, nil, nil, []string{newFile}, cluster)
	requireUnsafe(t, err)
	rows := conversionRows(t, resp)
	require.Len(t, rows, 2, rows)
	require.Contains(t, rows[0], "1 of 4 stored Widgets loses it: ns/a")
	require.Equal(t, []string{"operators/widget-converter:443 /convert"}, cluster.Proxied)
}
