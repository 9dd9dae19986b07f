package webhook

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
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
	dirs, err := filepath.Glob("../crdupgradesafety/testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	full := config.Default()
	if !full.Checks.CRD.ApiserverRejects.Enabled {
		t.Fatal("apiserverRejects is off by default: the test proves nothing")
	}
	webhook := WebhookSettings(full)
	accepted, refused := 0, 0
	for _, dir := range dirs {
		oldCRD, okOld := readTestdataCRD(filepath.Join(dir, "old.yaml"))
		newCRD, okNew := readTestdataCRD(filepath.Join(dir, "new.yaml"))
		if !okOld || !okNew {
			continue
		}
		evaluate := func(cfg *config.Settings) []crdupgradesafety.Finding {
			plan := evaluation.Plan{Pairs: []evaluation.Pair{{Old: oldCRD, New: newCRD, Strategy: evaluation.StrategyUpdate}}}
			res, err := evaluation.Run(context.Background(), evaluation.Request{Plan: plan, Settings: cfg})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			return res.Findings
		}
		with := evaluate(&full)
		if slices.ContainsFunc(with, func(f crdupgradesafety.Finding) bool {
			return f.Check == config.CheckAPIServerRejects && f.Severity == crdupgradesafety.SeverityError
		}) {
			refused++ // the apiserver refuses it before any webhook
			continue
		}
		accepted++
		others := slices.DeleteFunc(slices.Clone(with), func(f crdupgradesafety.Finding) bool {
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

// readTestdataCRD reads a CRD file of the engine's testdata; ok is false
// when the case has no such file or it is not a CRD.
func readTestdataCRD(path string) (*apiextv1.CustomResourceDefinition, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil || crd.Kind != "CustomResourceDefinition" {
		return nil, false
	}
	return crd, true
}
