package evaluation_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation/evaluationtest"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestFailModeUnreadableStoredObjects: the second use of failMode. Stored
// objects that cannot be read through the CRD's conversion webhook are an
// existingResources finding naming the webhook: an error under failMode
// closed, a warning under open. The same failure without a conversion
// webhook fails the run whatever failMode says.
func TestFailModeUnreadableStoredObjects(t *testing.T) {
	withWebhook := func(crd *apiextv1.CustomResourceDefinition) *apiextv1.CustomResourceDefinition {
		crd.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.WebhookConverter,
			Webhook: &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
				ClientConfig: &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "default", Name: "converter"}}}}
		return crd
	}
	listFails := errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: Post "https://converter.default.svc:443/convert": dial tcp: connection refused`)
	for _, tc := range []struct {
		failMode config.FailMode
		severity finding.Severity
	}{
		{config.FailModeClosed, finding.SeverityError},
		{config.FailModeOpen, finding.SeverityWarning},
	} {
		t.Run(string(tc.failMode), func(t *testing.T) {
			cfg := config.Default()
			cfg.FailMode = tc.failMode
			plan := evaluation.Plan{Pairs: []evaluation.Pair{{
				Old: withWebhook(testcrd.MustCRD(t, testcrd.OldCRD)), New: withWebhook(testcrd.MustCRD(t, testcrd.SafeCRD))}}}
			cluster := &evaluationtest.Cluster{Err: listFails}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
				Cluster: func() (evaluation.Cluster, error) { return cluster, nil }})
			require.NoError(t, err)
			require.Len(t, res.Findings, 1)
			f := res.Findings[0]
			require.Equal(t, config.CheckExistingResources, f.Check)
			require.Equal(t, tc.severity, f.Severity)
			line := report.FindingLine(f)
			require.Contains(t, line, "stored objects could not be read at version v1 through the conversion webhook (service default/converter)")
			require.Contains(t, line, "(failMode "+string(tc.failMode)+")")
		})
	}

	t.Run("a read the role does not allow is not the conversion webhook's failure", func(t *testing.T) {
		cfg := config.Default()
		plan := evaluation.Plan{Pairs: []evaluation.Pair{{
			Old: withWebhook(testcrd.MustCRD(t, testcrd.OldCRD)), New: withWebhook(testcrd.MustCRD(t, testcrd.SafeCRD))}}}
		forbidden := &kube.ForbiddenError{Group: "example.com", Resource: "widgets", Verb: "list", Err: errors.New("403")}
		_, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
			Cluster: func() (evaluation.Cluster, error) { return &evaluationtest.Cluster{Err: forbidden}, nil }})
		var fe *kube.ForbiddenError
		require.ErrorAs(t, err, &fe, "the run fails with the missing rule, failMode decides in the webhook")
	})

	t.Run("no conversion webhook: the run fails under either failMode", func(t *testing.T) {
		cfg := config.Default()
		cfg.FailMode = config.FailModeOpen
		plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: testcrd.MustCRD(t, testcrd.OldCRD), New: testcrd.MustCRD(t, testcrd.SafeCRD)}}}
		_, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: &cfg,
			Cluster: func() (evaluation.Cluster, error) {
				return &evaluationtest.Cluster{Err: errors.New("connection refused")}, nil
			}})
		require.EqualError(t, err, "checking existing custom resources of CRD widgets.example.com: connection refused")
	})
}
