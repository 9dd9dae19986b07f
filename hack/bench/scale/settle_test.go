package main

import (
	"testing"
	"time"
)

func TestSettled(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	w := 2 * time.Second
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    bool
	}{
		{"none yet", nil, false},
		{"idle below 5%", ms(50), true},
		{"busy, one sample", ms(1500), false},
		{"still falling", ms(1800, 900, 400), false},
		{"falling then flat at 6% of a core (300 CRDs)", ms(1800, 900, 130, 120, 125), true},
		{"flat but busy (more than half a core)", ms(1500, 1500, 1500), false},
		{"flat, one window higher", ms(400, 130, 140), false},
		{"flat two windows", ms(130, 120, 125), true},
		{"a late drop is still falling", ms(300, 290, 150), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := settled(tc.samples, w); got != tc.want {
				t.Errorf("settled(%v) = %v, want %v", tc.samples, got, tc.want)
			}
		})
	}
}
