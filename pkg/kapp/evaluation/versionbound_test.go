package evaluation_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/version"
)

// TestRunJudgesVersionBoundHazardsForTheServerVersion (issue 39, item 4):
// a live run (a deploy, the live tools command, the webhook) judges the
// CEL rules of stored objects and the managedFields a conversion webhook
// change puts at risk as the apiserver in front of it, whatever the
// settings say: a rule comparing two set lists with == refuses the stored
// object with a duplicate on 1.37 only (kubernetes#140293), and a webhook
// added while the object has managedFields entries at two versions is a
// warning on 1.35 and 1.36 only (kubernetes#136919).
func TestRunJudgesVersionBoundHazardsForTheServerVersion(t *testing.T) {
	old := testcrd.MustCRD(t, testcrd.CRDYAML("widgets", "Widget",
		`{tags: {type: array, items: {type: string}, x-kubernetes-list-type: set}, expected: {type: array, items: {type: string}, x-kubernetes-list-type: set}}`))
	ruled := old.DeepCopy()
	spec := ruled.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.XValidations = apiextv1.ValidationRules{{Rule: "self.tags == self.expected", Message: "tags differ"}}
	ruled.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	url := "https://converter.example/convert"
	converted := old.DeepCopy()
	converted.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
		Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}, ClientConfig: &apiextv1.WebhookClientConfig{URL: &url}}}
	obj := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default", "managedFields": []any{
			map[string]any{"manager": "flux", "operation": "Apply", "apiVersion": "example.com/v1alpha1", "fieldsType": "FieldsV1"},
			map[string]any{"manager": "kapp", "operation": "Update", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1"},
		}},
		"spec": map[string]any{"tags": []any{"a", "b"}, "expected": []any{"a", "a"}}}

	for _, tc := range []struct {
		minor         string
		cel, convWarn []string
	}{
		{"35", []string{"error celValidation ^.spec 0"}, []string{"warning managedFields  1"}},
		{"36", []string{"error celValidation ^.spec 0"}, []string{"warning managedFields  1"}},
		{"37", []string{"error celValidation ^.spec 1"}, nil},
	} {
		for _, pair := range []struct {
			name string
			new  *apiextv1.CustomResourceDefinition
			want []string
		}{{"a rule with == on set lists", ruled, tc.cel}, {"a conversion webhook added", converted, tc.convWarn}} {
			t.Run(fmt.Sprintf("1.%s %s", tc.minor, pair.name), func(t *testing.T) {
				cluster := &evaluationtest.Cluster{Version: &version.Info{Major: "1", Minor: tc.minor}, Objs: []map[string]any{obj}}
				cfg := config.Default()
				cfg.KubeVersion = config.KubeVersion{Major: 1, Minor: 37} // an offline setting: the cluster's version wins
				res, err := evaluation.Run(context.Background(), evaluation.Request{Settings: &cfg,
					Plan:    evaluation.Plan{Pairs: []evaluation.Pair{{Old: old, New: pair.new}}},
					Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
				require.NoError(t, err)
				var got []string
				for _, f := range res.Findings {
					if f.Check != config.CheckCELValidation && f.Check != config.CheckManagedFields {
						continue
					}
					affected := 0
					if f.Impact != nil {
						affected = f.Impact.Affected
					}
					got = append(got, fmt.Sprintf("%s %s %s %d", f.Severity, f.Check, f.Field, affected))
				}
				require.Equal(t, pair.want, got)
			})
		}
	}
}
