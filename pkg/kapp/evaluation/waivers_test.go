package evaluation

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// evaluateLines evaluates plan offline under cfg and returns each finding
// as "severity check: message".
func evaluateLines(t *testing.T, plan Plan, cfg *config.Settings) []string {
	t.Helper()
	fs, err := Evaluate(context.Background(), plan, cfg, nil)
	require.NoError(t, err)
	out := []string{}
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Check+": "+report.Message(f))
	}
	return out
}

func annotated(t *testing.T, doc string, annotations map[string]string) *apiextv1.CustomResourceDefinition {
	crd := testcrd.MustCRD(t, doc)
	crd.Annotations = annotations
	return crd
}

// TestEvaluateCarriedOverWaiverAnnotations: a waiver annotation counts
// only on the update that adds or changes it. Annotations equal to the
// old CRD's were reviewed with an earlier change: they waive nothing, and
// the findings say so; changed (a new reason, a new expiry) or added ones
// count. Each check the annotation names is judged alike.
func TestEvaluateCarriedOverWaiverAnnotations(t *testing.T) {
	reviewed := map[string]string{config.WaiveAnnotation: "enum,minimum", config.WaiveReasonAnnotation: "reviewed in PR 1"}
	changed := map[string]string{config.WaiveAnnotation: "enum,minimum", config.WaiveReasonAnnotation: "reviewed in PR 2"}
	cfg := config.Default()
	const carried = " (not exempted: the waiver annotation is carried over unchanged from the stored CRD: it was reviewed with an earlier change, not this one (add or change it with the change it waives); it read: waive annotation: reviewed in PR 1)"
	cases := []struct {
		name     string
		old, new map[string]string
		want     []string
	}{
		{name: "added with the change: waives", old: nil, new: reviewed, want: []string{
			`warning enum: enum values removed: ["blue"] (exempted: waive annotation: reviewed in PR 1)`,
			"warning minimum: minimum increased: 1 -> 5 (exempted: waive annotation: reviewed in PR 1)"}},
		{name: "carried over unchanged: waives nothing", old: reviewed, new: reviewed, want: []string{
			`error enum: enum values removed: ["blue"]` + carried,
			"error minimum: minimum increased: 1 -> 5" + carried}},
		{name: "changed with the change: waives", old: reviewed, new: changed, want: []string{
			`warning enum: enum values removed: ["blue"] (exempted: waive annotation: reviewed in PR 2)`,
			"warning minimum: minimum increased: 1 -> 5 (exempted: waive annotation: reviewed in PR 2)"}},
		{name: "an expiry added counts as a change", old: reviewed,
			new: map[string]string{config.WaiveAnnotation: "enum,minimum", config.WaiveReasonAnnotation: "reviewed in PR 1", config.WaiveExpiresAnnotation: "2099-12-31"},
			want: []string{
				`warning enum: enum values removed: ["blue"] (exempted: waive annotation: reviewed in PR 1; until 2099-12-31)`,
				"warning minimum: minimum increased: 1 -> 5 (exempted: waive annotation: reviewed in PR 1; until 2099-12-31)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Plan{Pairs: []Pair{{Old: annotated(t, oldCRD, tc.old), New: annotated(t, testcrd.UnsafeCRD, tc.new)}}}
			require.Equal(t, tc.want, evaluateLines(t, plan, &cfg))
		})
	}
}

// TestEvaluateAnnotationWaiversSetting: annotationWaivers decides which
// checks a CRD's annotations may waive; a settings waiver is not bound by
// it.
func TestEvaluateAnnotationWaiversSetting(t *testing.T) {
	ann := map[string]string{config.WaiveAnnotation: "enum,minimum", config.WaiveReasonAnnotation: "reviewed"}
	plan := func() Plan {
		return Plan{Pairs: []Pair{{Old: testcrd.MustCRD(t, oldCRD), New: annotated(t, testcrd.UnsafeCRD, ann)}}}
	}
	const refused = " (not exempted: the settings' annotationWaivers do not let a waiver annotation waive this check (in the admission webhook, by default, none); it read: waive annotation: reviewed)"
	cfg := config.Default()
	cfg.AnnotationWaivers = &config.AnnotationWaivers{Checks: []string{config.CheckEnum}}
	require.Equal(t, []string{
		`warning enum: enum values removed: ["blue"] (exempted: waive annotation: reviewed)`,
		"error minimum: minimum increased: 1 -> 5" + refused,
	}, evaluateLines(t, plan(), &cfg))

	cfg.AnnotationWaivers = &config.AnnotationWaivers{Checks: []string{}}
	cfg.Waivers = []config.Waiver{{CRD: "widgets.example.com", Checks: []string{config.CheckMinimum}, Reason: "admin reviewed", Source: config.SourceSettings}}
	require.Equal(t, []string{
		`error enum: enum values removed: ["blue"]` + refused,
		"warning minimum: minimum increased: 1 -> 5 (exempted: admin reviewed)",
	}, evaluateLines(t, plan(), &cfg))
}

// TestEvaluateDataLoss: a field removal that stored objects (here
// --objects samples) hold loses their data. No waiver passes it, neither
// the CRD's own annotation nor the settings' waivers; an acceptDataLoss
// entry that names exactly that loss, for at least as many objects as the
// run counts, does; one for fewer objects does not.
func TestEvaluateDataLoss(t *testing.T) {
	oldDoc := testcrd.CRDYAML("widgets", "Widget", "{size: {type: integer}, color: {type: string}}")
	newDoc := testcrd.CRDYAML("widgets", "Widget", "{size: {type: integer}}")
	samples := []map[string]any{
		{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "a", "namespace": "default"}, "spec": map[string]any{"color": "red"}},
		{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "b", "namespace": "default"}, "spec": map[string]any{"color": "blue"}},
		{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "c", "namespace": "default"}, "spec": map[string]any{"size": 1}},
	}
	selfWaiving := map[string]string{config.WaiveAnnotation: "existingFieldRemoval,existingResources", config.WaiveReasonAnnotation: "trust me"}
	accept := func(objects int) []config.Acceptance {
		return []config.Acceptance{{CRD: "widgets.example.com", Check: config.CheckExistingFieldRemoval, Version: "v1", Path: "^.spec.color",
			Objects: objects, Reason: "colors retired", Expires: time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)}}
	}
	cases := []struct {
		name        string
		annotations map[string]string
		config      func(*config.Settings)
		severity    string
		contains    []string
	}{
		{name: "the CRD's own annotation does not waive it", annotations: selfWaiving, severity: "error",
			contains: []string{"not exempted: a waiver annotation cannot waive a loss of stored data", "acceptDataLoss"}},
		{name: "a settings waiver does not waive it", severity: "error", config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: "widgets.example.com", Checks: []string{config.CheckExistingFieldRemoval}, Reason: "r", Source: config.SourceSettings}}
		}, contains: []string{"not exempted: a waiver cannot waive a loss of stored data"}},
		{name: "accepted for the objects counted", annotations: selfWaiving, severity: "warning", config: func(c *config.Settings) { c.AcceptDataLoss = accept(2) },
			contains: []string{"data loss accepted: colors retired; at most 2 objects; until 2099-12-31"}},
		{name: "accepted for more objects than counted", severity: "warning", config: func(c *config.Settings) { c.AcceptDataLoss = accept(10) },
			contains: []string{"data loss accepted"}},
		{name: "an acceptance for fewer objects does not cover it", severity: "error", config: func(c *config.Settings) { c.AcceptDataLoss = accept(1) },
			contains: []string{"not accepted: the loss affects 2 objects, more than the 1 accepted"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			plan := Plan{Pairs: []Pair{{Old: testcrd.MustCRD(t, oldDoc), New: annotated(t, newDoc, tc.annotations), Samples: samples}}}
			fs, err := Evaluate(context.Background(), plan, &cfg, nil)
			require.NoError(t, err)
			var removal []string
			for _, f := range fs {
				if f.Check == config.CheckExistingFieldRemoval {
					require.True(t, f.DataLoss)
					removal = append(removal, string(f.Severity)+" "+report.Message(f)+" | "+report.RemedyText(f))
				} else {
					require.NotEqual(t, "error", string(f.Severity), "another finding: %s", report.Message(f))
				}
			}
			require.Len(t, removal, 1)
			require.True(t, strings.HasPrefix(removal[0], tc.severity+" "), removal[0])
			for _, c := range tc.contains {
				require.Contains(t, removal[0], c)
			}
		})
	}
}
