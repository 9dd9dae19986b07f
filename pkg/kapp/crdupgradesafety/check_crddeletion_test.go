package crdupgradesafety

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestDeletion(t *testing.T) {
	const replace = "update strategy always-replace"
	cases := []struct {
		name   string
		count  int
		cause  string // a replace (Replacement) rather than a deletion
		config func(*config.Settings)
		want   []string
	}{
		{name: "no custom resources", count: 0, want: []string{}},
		{name: "one custom resource", count: 1, want: []string{"error crdDeletion  : data loss: deleting the CRD would delete its 1 existing custom resource"}},
		{name: "several custom resources", count: 12, want: []string{"error crdDeletion  : data loss: deleting the CRD would delete its 12 existing custom resources"}},
		{name: "crdDeletion disabled", count: 12, config: func(c *config.Settings) { c.Checks.CRD.CRDDeletion.Enabled = false }, want: []string{}},
		{name: "warn mode", count: 2, config: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{"warning crdDeletion  : data loss: deleting the CRD would delete its 2 existing custom resources"}},
		{name: "exempted", count: 2, config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: testCRDName, Checks: []string{config.CheckCRDDeletion}, Reason: "data migrated"}}
		}, want: []string{"warning crdDeletion  : data loss: deleting the CRD would delete its 2 existing custom resources (exempted: data migrated)"}},
		{name: "replace, no custom resources: nothing is lost", cause: replace, count: 0, want: []string{}},
		{name: "replace, one custom resource", cause: replace, count: 1,
			want: []string{"error crdDeletion  : data loss: update strategy always-replace: kapp would delete and recreate the CRD, deleting its 1 existing custom resource"}},
		{name: "replace, several custom resources", cause: replace, count: 3,
			want: []string{"error crdDeletion  : data loss: update strategy always-replace: kapp would delete and recreate the CRD, deleting its 3 existing custom resources"}},
		{name: "replace, crdDeletion disabled", cause: replace, count: 3,
			config: func(c *config.Settings) { c.Checks.CRD.CRDDeletion.Enabled = false }, want: []string{}},
		{name: "replace, warn mode", cause: replace, count: 3, config: func(c *config.Settings) { c.Mode = config.ModeWarn },
			want: []string{"warning crdDeletion  : data loss: update strategy always-replace: kapp would delete and recreate the CRD, deleting its 3 existing custom resources"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			fs := Deletion(testCRDName, tc.count, "", &cfg)
			if tc.cause != "" {
				fs = Deletion(testCRDName, tc.count, tc.cause, &cfg)
			}
			if got := render(fs); !equalLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != testCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, testCRDName)
				}
			}
		})
	}
	if got := render(Deletion(testCRDName, 1, "", nil)); len(got) != 1 || got[0] != "error crdDeletion  : data loss: deleting the CRD would delete its 1 existing custom resource" {
		t.Fatalf("nil config: got %q", got)
	}
}

func TestDropped(t *testing.T) {
	const msg = "crdDeletion  : data loss: missing from the new inputs: kapp would delete the CRD with all its custom resources"
	cases := []struct {
		name   string
		config func(*config.Settings)
		want   []string
	}{
		{name: "default: an error", want: []string{"error " + msg}},
		{name: "crdDeletion disabled", config: func(c *config.Settings) { c.Checks.CRD.CRDDeletion.Enabled = false }, want: []string{}},
		{name: "warn mode", config: func(c *config.Settings) { c.Mode = config.ModeWarn }, want: []string{"warning " + msg}},
		{name: "exempted", config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: testCRDName, Checks: []string{config.CheckCRDDeletion}, Reason: "moved to another operator"}}
		}, want: []string{"warning " + msg + " (exempted: moved to another operator)"}},
		{name: "exemption of another check", config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: testCRDName, Checks: []string{config.CheckEnum}}}
		}, want: []string{"error " + msg}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			fs := Dropped(testCRDName, &cfg)
			if got := render(fs); !equalLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != testCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, testCRDName)
				}
			}
		})
	}
	if got := render(Dropped(testCRDName, nil)); len(got) != 1 || got[0] != "error "+msg {
		t.Fatalf("nil config: got %q", got)
	}
}
