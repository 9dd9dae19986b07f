package main

import (
	"testing"

	"github.com/crdsafety/kapp/hack/convwebhook/widget"
)

func TestConversion(t *testing.T) {
	h, err := widget.Handler(widget.Types{V1: &WidgetV1{}, V2: &WidgetV2{}}, "e2e.example.com", "Widget")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []widget.Case{
		{Name: "small", V1: map[string]any{"size": 3, "color": "red", "replicas": 2},
			V2:     map[string]any{"dimensions": 3, "color": "red", "replicas": 2},
			V1Back: map[string]any{"size": 3, "color": "red", "replicas": 2}},
		{Name: "half", V1: map[string]any{"size": 4, "color": "green", "replicas": "50%"},
			V2:     map[string]any{"dimensions": 4, "color": "green", "replicas": "50%"},
			V1Back: map[string]any{"size": 4, "color": "green", "replicas": "50%"}},
		{Name: "plain", V1: map[string]any{"size": 1}, V2: map[string]any{"dimensions": 1}, V1Back: map[string]any{"size": 1}},
	} {
		t.Run(c.Name, func(t *testing.T) {
			if diff := widget.RoundTrip(h, c); diff != "" {
				t.Error(diff)
			}
		})
	}
}
