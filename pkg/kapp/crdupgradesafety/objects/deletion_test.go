package objects

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
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
		{name: "a waiver does not waive the loss", count: 2, config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Checks: []string{config.CheckCRDDeletion}, Reason: "data migrated"}}
		}, want: []string{"error crdDeletion  : data loss: deleting the CRD would delete its 2 existing custom resources (not exempted: a waiver cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it; it read: data migrated)"}},
		{name: "accepted: the loss is within the acceptance", count: 2, config: func(c *config.Settings) {
			c.AcceptDataLoss = []config.Acceptance{{CRD: enginetest.TestCRDName, Check: config.CheckCRDDeletion, Objects: 2, Reason: "data migrated", Expires: enginetest.FarFuture}}
		}, want: []string{"warning crdDeletion  : data loss: deleting the CRD would delete its 2 existing custom resources (data loss accepted: data migrated; at most 2 objects; until 2099-12-31)"}},
		{name: "not accepted: a larger loss", count: 3, config: func(c *config.Settings) {
			c.AcceptDataLoss = []config.Acceptance{{CRD: enginetest.TestCRDName, Check: config.CheckCRDDeletion, Objects: 2, Reason: "data migrated", Expires: enginetest.FarFuture}}
		}, want: []string{"error crdDeletion  : data loss: deleting the CRD would delete its 3 existing custom resources (not accepted: the loss affects 3 objects, more than the 2 accepted; the acceptance read: data migrated; at most 2 objects; until 2099-12-31)"}},
		{name: "not accepted: expired", count: 2, config: func(c *config.Settings) {
			c.Now = enginetest.FarFuture.AddDate(0, 0, 1)
			c.AcceptDataLoss = []config.Acceptance{{CRD: enginetest.TestCRDName, Check: config.CheckCRDDeletion, Objects: 2, Reason: "data migrated", Expires: enginetest.FarFuture}}
		}, want: []string{"error crdDeletion  : data loss: deleting the CRD would delete its 2 existing custom resources (not accepted: the acceptance expired at the end of 2099-12-31 UTC; the acceptance read: data migrated; at most 2 objects; until 2099-12-31)"}},
		{name: "not accepted: another CRD", count: 2, config: func(c *config.Settings) {
			c.AcceptDataLoss = []config.Acceptance{{CRD: "gadgets.example.com", Check: config.CheckCRDDeletion, Objects: 2, Reason: "data migrated", Expires: enginetest.FarFuture}}
		}, want: []string{"error crdDeletion  : data loss: deleting the CRD would delete its 2 existing custom resources"}},
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
			fs := Deletion(enginetest.TestCRDName, tc.count, "", &cfg)
			if tc.cause != "" {
				fs = Deletion(enginetest.TestCRDName, tc.count, tc.cause, &cfg)
			}
			if got := enginetest.Render(fs); !enginetest.EqualLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != enginetest.TestCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, enginetest.TestCRDName)
				}
			}
		})
	}
	if got := enginetest.Render(Deletion(enginetest.TestCRDName, 1, "", nil)); len(got) != 1 || got[0] != "error crdDeletion  : data loss: deleting the CRD would delete its 1 existing custom resource" {
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
		{name: "a waiver does not waive the loss", config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Checks: []string{config.CheckCRDDeletion}, Reason: "moved to another operator"}}
		}, want: []string{"error " + msg + " (not exempted: a waiver cannot waive a loss of stored data; only an acceptDataLoss entry of the settings that names the loss accepts it; it read: moved to another operator)"}},
		{name: "accepted offline: the objects are not counted", config: func(c *config.Settings) {
			c.AcceptDataLoss = []config.Acceptance{{CRD: enginetest.TestCRDName, Check: config.CheckCRDDeletion, Objects: 5, Reason: "moved to another operator", Expires: enginetest.FarFuture}}
		}, want: []string{"warning " + msg + " (data loss accepted: moved to another operator; at most 5 objects, not counted in this run (no objects read): the count is enforced where the objects are read; until 2099-12-31)"}},
		{name: "not accepted live when the objects are not counted", config: func(c *config.Settings) {
			c.Live = true
			c.AcceptDataLoss = []config.Acceptance{{CRD: enginetest.TestCRDName, Check: config.CheckCRDDeletion, Objects: 5, Reason: "moved to another operator", Expires: enginetest.FarFuture}}
		}, want: []string{"error " + msg + " (not accepted: this run reads the cluster but could not count the objects the loss affects, so it cannot tell that the acceptance covers it; the acceptance read: moved to another operator; at most 5 objects; until 2099-12-31)"}},
		{name: "exemption of another check", config: func(c *config.Settings) {
			c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Checks: []string{config.CheckEnum}}}
		}, want: []string{"error " + msg}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			fs := Dropped(enginetest.TestCRDName, &cfg)
			if got := enginetest.Render(fs); !enginetest.EqualLines(got, tc.want) {
				t.Fatalf("findings differ\n got: %q\nwant: %q", got, tc.want)
			}
			for _, f := range fs {
				if f.CRD != enginetest.TestCRDName {
					t.Errorf("finding names CRD %q, want %q", f.CRD, enginetest.TestCRDName)
				}
			}
		})
	}
	if got := enginetest.Render(Dropped(enginetest.TestCRDName, nil)); len(got) != 1 || got[0] != "error "+msg {
		t.Fatalf("nil config: got %q", got)
	}
}
