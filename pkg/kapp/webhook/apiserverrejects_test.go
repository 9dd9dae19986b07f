package webhook

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
)

// TestApiserverRejectsRedundantInWebhook proves that the webhook loses
// nothing by not running apiserverRejects (WebhookSettings): for every
// pair of the engine's testdata whose update the apiserver accepts (the
// check, which runs the apiserver's own validation of a CRD update, finds
// no error) — the only updates that reach a validating webhook, since the
// apiserver validates before it calls them — the other checks find the
// same with and without it, and the check itself adds no error (at most
// the apiserver's warnings, which the apiserver returns to the client
// itself). For the pairs the apiserver refuses, the webhook is never
// called.
func TestApiserverRejectsRedundantInWebhook(t *testing.T) {
	full := config.Default()
	if !full.Checks.CRD.ApiserverRejects.Enabled {
		t.Fatal("apiserverRejects is off by default: the test proves nothing")
	}
	webhook := WebhookSettings(full)
	accepted, refused := 0, 0
	for _, pair := range testcrd.Pairs(t, "../crdupgradesafety/testdata") {
		dir, oldCRD, newCRD := pair.Dir, pair.Old, pair.New
		evaluate := func(cfg *config.Settings) []finding.Finding {
			plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: oldCRD, New: newCRD, Strategy: evaluation.StrategyUpdate}}}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: cfg})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			return res.Findings
		}
		with := evaluate(&full)
		if slices.ContainsFunc(with, func(f finding.Finding) bool {
			return f.Check == config.CheckAPIServerRejects && f.Severity == finding.SeverityError
		}) {
			refused++ // the apiserver refuses it before any webhook
			continue
		}
		accepted++
		others := slices.DeleteFunc(slices.Clone(with), func(f finding.Finding) bool {
			return f.Check == config.CheckAPIServerRejects
		})
		without := evaluate(&webhook)
		if (len(others) > 0 || len(without) > 0) && !reflect.DeepEqual(others, without) {
			t.Errorf("%s: the other checks find differently without apiserverRejects:\nwith:    %v\nwithout: %v", dir, others, without)
		}
	}
	t.Logf("%d pairs the apiserver accepts, %d it refuses", accepted, refused)
	if accepted < 50 || refused < 1 {
		t.Fatalf("%d pairs accepted, %d refused: the testdata no longer exercises both", accepted, refused)
	}
}
