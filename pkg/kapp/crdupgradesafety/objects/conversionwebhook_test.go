package objects

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/conversion"
	"github.com/crdsafety/kapp/pkg/kapp/conversion/conversiontest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// convSummary is a finding of the conversion probe as the tests compare
// it: severity, data loss, versions, field, kind of change, and the
// objects it names (affected/probed: names).
func convSummary(f finding.Finding) string {
	s := strings.TrimSpace(fmt.Sprintf("%s %s %s", f.Severity, f.Change.Kind, f.Version))
	if f.PairVersion != "" {
		s += "->" + f.PairVersion
	}
	if f.Field != "" {
		s += " " + f.Field.String()
	}
	if f.DataLoss {
		s += " dataLoss"
	}
	if f.Impact != nil {
		var names []string
		for _, e := range f.Impact.Effects {
			for _, ex := range e.Examples {
				names = append(names, ex.Object)
			}
		}
		s += fmt.Sprintf(" %d/%d: %s", f.Impact.Affected, f.Impact.Objects, strings.Join(names, ","))
	}
	return s
}

func TestConversionWebhookFindings(t *testing.T) {
	cases := []struct {
		name   string
		hook   conversiontest.Hook
		edit   func(*config.Settings)
		budget conversion.Options
		want   []string
	}{
		{name: "lossless: no finding", hook: conversiontest.Hook{}},
		{name: "lossy: the field, data loss, the objects named",
			hook: conversiontest.Hook{Lossy: true},
			want: []string{
				"error lost v1 ^.spec.color dataLoss 1/4: ns/a",
				"error lost v2 ^.spec.color dataLoss 2/4: ns/b,ns/d",
			}},
		{name: "failing on one object: refused, named",
			hook: conversiontest.Hook{FailLabel: true},
			want: []string{
				"error refused v1->v2 1/4: ns/c",
				"error nonStorageHopRefused v1->v3 1/4: ns/c",
			}},
		{name: "hub only while storedVersions holds v1 and v2",
			hook: conversiontest.Hook{HubOnly: true},
			want: []string{"error nonStorageHopRefused v1->v3 4/4: ns/a,ns/b,ns/c"}},
		{name: "stash annotations near the limit: a warning",
			hook: conversiontest.Hook{Stash: 200 << 10},
			want: []string{"warning annotationsNearLimit v2 4/4: ns/a,ns/b,ns/c"}},
		{name: "annotationEnforcement Strict: an error",
			hook: conversiontest.Hook{Stash: 200 << 10},
			edit: func(c *config.Settings) {
				c.Checks.CRD.ConversionWebhook.AnnotationEnforcement = config.EnforcementStrict
			},
			want: []string{"error annotationsNearLimit v2 4/4: ns/a,ns/b,ns/c"}},
		{name: "annotationEnforcement None: not reported",
			hook: conversiontest.Hook{Stash: 200 << 10},
			edit: func(c *config.Settings) {
				c.Checks.CRD.ConversionWebhook.AnnotationEnforcement = config.EnforcementNone
			}},
		{name: "disabled: nothing", hook: conversiontest.Hook{Lossy: true},
			edit: func(c *config.Settings) { c.Checks.CRD.ConversionWebhook.Enabled = false }},
		{name: "mode warn: a warning", hook: conversiontest.Hook{FailLabel: true},
			edit: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{
				"warning refused v1->v2 1/4: ns/c",
				"warning nonStorageHopRefused v1->v3 1/4: ns/c",
			}},
		{name: "a review of several refused while each alone passes",
			hook: conversiontest.Hook{OneAtATime: true},
			want: []string{"error batchRefused v1", "error batchRefused v2", "error batchRefused v3"}},
		{name: "not answering: not verified, an error under failMode closed",
			hook: conversiontest.Hook{HttpStatus: 503},
			want: []string{"error unverified"}},
		{name: "not answering under failMode open: a warning",
			hook: conversiontest.Hook{HttpStatus: 503},
			edit: func(c *config.Settings) { c.FailMode = config.FailModeOpen },
			want: []string{"warning unverified"}},
		{name: "the budget cut the probe short: said, a warning",
			hook:   conversiontest.Hook{},
			budget: conversion.Options{MaxObjects: 2},
			want:   []string{"warning cut"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := conversiontest.Serve(t, &tc.hook)
			cfg := config.Default()
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			rep, err := conversion.Probe(context.Background(), crd, conversiontest.Widgets(), tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			r := NewConversionReader(crd, "url test", finding.SourceCluster, ConversionBudget{MaxObjects: tc.budget.MaxObjects})
			r.Add(rep)
			var got []string
			for _, f := range r.Findings(&cfg) {
				if f.Check != config.CheckConversionWebhook || f.Fingerprint == "" || f.ChangeText == "" || f.Remedy == nil {
					t.Errorf("finding without its facts: %+v", f)
				}
				got = append(got, convSummary(f))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The report's pages add up: two pages of a lossy probe are one finding
// per field and version, with every object counted and the first by name
// kept; a page past the budget counts as not probed.
func TestConversionReaderPages(t *testing.T) {
	crd := conversiontest.Serve(t, &conversiontest.Hook{Lossy: true})
	ws := conversiontest.Widgets()
	r := NewConversionReader(crd, "url test", finding.SourceSamples, ConversionBudget{MaxObjects: 4})
	for _, page := range [][]int{{3, 2}, {1, 0}} {
		var objs = ws[:0:0]
		for _, i := range page {
			objs = append(objs, ws[i])
		}
		rep, err := conversion.Probe(context.Background(), crd, objs, conversion.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.Add(rep)
	}
	r.Counted(3, conversion.CutMaxObjects)
	var got []string
	for _, f := range r.Findings(nil) {
		got = append(got, convSummary(f))
	}
	want := []string{
		"error lost v1 ^.spec.color dataLoss 1/4: ns/a",
		"error lost v2 ^.spec.color dataLoss 2/4: ns/b,ns/d",
		"warning cut",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n got %q\nwant %q", got, want)
	}
	for _, f := range r.Findings(nil) {
		if f.Change.Kind == "cut" && !strings.Contains(f.ChangeText, "4 of 7") || f.Change.Kind == "cut" && !strings.Contains(f.ChangeText, "maxObjects 4") {
			t.Errorf("the cut says %q", f.ChangeText)
		}
	}
}

// Fingerprints are of facts: the same finding from another run (other
// objects, other details) keeps its fingerprint; another field does not.
func TestConversionWebhookFingerprints(t *testing.T) {
	run := func(h conversiontest.Hook, idx ...int) map[string]string {
		crd := conversiontest.Serve(t, &h)
		var objs = conversiontest.Widgets()[:0:0]
		for _, i := range idx {
			objs = append(objs, conversiontest.Widgets()[i])
		}
		rep, err := conversion.Probe(context.Background(), crd, objs, conversion.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := NewConversionReader(crd, "url test", finding.SourceCluster, ConversionBudget{})
		r.Add(rep)
		out := map[string]string{}
		for _, f := range r.Findings(nil) {
			out[convSummary(f)[:strings.Index(convSummary(f), " dataLoss")]] = f.Fingerprint
		}
		return out
	}
	a, b := run(conversiontest.Hook{Lossy: true}, 0, 1, 3), run(conversiontest.Hook{Lossy: true}, 3)
	if a["error lost v2 ^.spec.color"] == "" || a["error lost v2 ^.spec.color"] != b["error lost v2 ^.spec.color"] {
		t.Errorf("fingerprints of one loss differ with the objects: %v %v", a, b)
	}
	if a["error lost v1 ^.spec.color"] == a["error lost v2 ^.spec.color"] {
		t.Error("one fingerprint for a loss at two versions")
	}
}

func TestNeedsConversionProbe(t *testing.T) {
	base := func() *apiextv1.CustomResourceDefinition { return conversiontest.WidgetsCRD(t) }
	cases := []struct {
		name string
		edit func(old, new *apiextv1.CustomResourceDefinition)
		want bool
	}{
		{name: "nothing changes", edit: func(old, new *apiextv1.CustomResourceDefinition) {}},
		{name: "a description only", edit: func(old, new *apiextv1.CustomResourceDefinition) {
			new.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "new words"
		}},
		{name: "the storage version changes", want: true, edit: func(old, new *apiextv1.CustomResourceDefinition) {
			new.Spec.Versions[1].Storage, new.Spec.Versions[2].Storage = false, true
		}},
		{name: "a version added", want: true, edit: func(old, new *apiextv1.CustomResourceDefinition) {
			old.Spec.Versions = old.Spec.Versions[:2]
		}},
		{name: "a version unserved", want: true, edit: func(old, new *apiextv1.CustomResourceDefinition) {
			new.Spec.Versions[0].Served = false
		}},
		{name: "the webhook's path changes", want: true, edit: func(old, new *apiextv1.CustomResourceDefinition) {
			u := "https://example.com/convert-v2"
			new.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u}
		}},
		{name: "a service's port as the apiserver defaults it, and a file without it: no change", edit: func(old, new *apiextv1.CustomResourceDefinition) {
			port := int32(443)
			path := "/convert"
			old.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "ops", Name: "conv", Path: &path, Port: &port}}
			new.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{Service: &apiextv1.ServiceReference{Namespace: "ops", Name: "conv", Path: &path}}
		}},
		{name: "conversion None -> Webhook", want: true, edit: func(old, new *apiextv1.CustomResourceDefinition) {
			old.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
		}},
		{name: "Webhook -> None: no webhook to probe", edit: func(old, new *apiextv1.CustomResourceDefinition) {
			new.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, new := base(), base()
			tc.edit(old, new)
			if got := NeedsConversionProbe(old, new); got != tc.want {
				t.Errorf("NeedsConversionProbe = %t, want %t", got, tc.want)
			}
		})
	}
	if NeedsConversionProbe(nil, base()) {
		t.Error("a create has no stored objects to probe")
	}
}
