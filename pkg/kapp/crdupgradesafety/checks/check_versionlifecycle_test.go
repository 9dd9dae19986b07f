package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// deprecated marks the named versions deprecated: true, with a
// deprecationWarning.
func deprecated(names ...string) func(*apiextv1.CustomResourceDefinition) {
	return func(c *apiextv1.CustomResourceDefinition) {
		for i := range c.Spec.Versions {
			for _, n := range names {
				if c.Spec.Versions[i].Name == n {
					c.Spec.Versions[i].Deprecated = true
					w := "example.com/" + n + " Widget is deprecated"
					c.Spec.Versions[i].DeprecationWarning = &w
				}
			}
		}
	}
}

func TestVersionLifecycle(t *testing.T) {
	v1beta1 := enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: false, Spec: ""}
	v1beta1Unserved := enginetest.TestVersion{Name: "v1beta1", Served: false, Storage: false, Spec: ""}
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}
	stored := enginetest.WithStoredVersions("v1")

	const (
		svrRemoved  = `error servedVersionRemoval v1beta1 : served version "v1beta1" removed without first being set served: false`
		svrUnserved = `warning servedVersionRemoval v1beta1 : version "v1beta1" no longer served (served: true -> false): its clients get 404 Not Found`
		removed     = `versionLifecycle v1beta1 : served version "v1beta1" removed without a release that marked it deprecated: true`
		unserved    = `versionLifecycle v1beta1 : version "v1beta1" no longer served without a release that marked it deprecated: true: its clients had no deprecation warning`
	)
	strict := func(c *config.Settings) {
		c.Checks.CRD.VersionLifecycle.NotDeprecatedEnforcement = config.EnforcementStrict
	}
	onlyLifecycle := func(c *config.Settings) { c.Checks.CRD.ServedVersionRemoval.Enabled = false }

	runCRDCases(t, []crdCase{
		// Deprecated in a release, then unserved, then removed: the lifecycle.
		{name: "deprecated, then unserved: no finding", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored, deprecated("v1beta1")),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored, deprecated("v1beta1")), config: onlyLifecycle, want: []string{}},
		{name: "deprecated, then unserved: servedVersionRemoval's warning stays", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored, deprecated("v1beta1")),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored, deprecated("v1beta1")), want: []string{svrUnserved}},
		{name: "deprecated and unserved, then removed: no finding", old: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored, deprecated("v1beta1")),
			new: enginetest.With(enginetest.NewCRD(t, v1), stored), want: []string{}},
		{name: "deprecated (served), then removed: only servedVersionRemoval", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored, deprecated("v1beta1")),
			new: enginetest.With(enginetest.NewCRD(t, v1), stored), want: []string{svrRemoved}},
		{name: "deprecated, still served: no finding", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored, deprecated("v1beta1")),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored, deprecated("v1beta1")), want: []string{}},
		{name: "deprecated now, still served: no finding", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored, deprecated("v1beta1")), want: []string{}},

		// Not deprecated first.
		{name: "unserved without deprecation: a warning", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored), config: onlyLifecycle, want: []string{"warning " + unserved}},
		{name: "unserved without deprecation, beside servedVersionRemoval", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored), want: []string{svrUnserved, "warning " + unserved}},
		{name: "deprecated in the same update that unserves it: no release warned", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored, deprecated("v1beta1")), config: onlyLifecycle, want: []string{"warning " + unserved}},
		{name: "unserved without deprecation, Strict: an error", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored), config: func(c *config.Settings) { strict(c); onlyLifecycle(c) },
			want: []string{"error " + unserved}},
		{name: "removed without deprecation: a warning beside servedVersionRemoval's error", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1), stored), want: []string{svrRemoved, "warning " + removed}},
		{name: "removed without deprecation, Strict: an error", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1), stored), config: strict, want: []string{svrRemoved, "error " + removed}},
		{name: "Strict under mode warn: a warning", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored), config: func(c *config.Settings) {
				strict(c)
				onlyLifecycle(c)
				c.Mode = config.ModeWarn
			}, want: []string{"warning " + unserved}},
		{name: "an unserved version that was never deprecated, removed: retired earlier, no finding",
			old: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored), new: enginetest.With(enginetest.NewCRD(t, v1), stored), config: strict, want: []string{}},

		// Settings.
		{name: "notDeprecatedEnforcement None", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored),
			new: enginetest.With(enginetest.NewCRD(t, v1beta1Unserved, v1), stored), config: func(c *config.Settings) {
				onlyLifecycle(c)
				c.Checks.CRD.VersionLifecycle.NotDeprecatedEnforcement = config.EnforcementNone
			}, want: []string{}},
		{name: "disabled", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored), new: enginetest.With(enginetest.NewCRD(t, v1), stored), config: func(c *config.Settings) {
			strict(c)
			c.Checks.CRD.VersionLifecycle.Enabled = false
		}, want: []string{svrRemoved}},
		{name: "exempted", old: enginetest.With(enginetest.NewCRD(t, v1beta1, v1), stored), new: enginetest.With(enginetest.NewCRD(t, v1), stored), config: func(c *config.Settings) {
			strict(c)
			c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Checks: []string{config.CheckVersionLifecycle}, Reason: "no clients yet"}}
		}, want: []string{svrRemoved, "warning " + removed + " (exempted: no clients yet)"}},
	})
}

// TestVersionLifecycleRemedy: the way forward names the version.
func TestVersionLifecycleRemedy(t *testing.T) {
	v1 := enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}
	old := enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: false, Spec: ""}, v1)
	fs := Compare(old, enginetest.NewCRD(t, v1), nil)
	for _, f := range fs {
		if f.Check != config.CheckVersionLifecycle {
			continue
		}
		if f.Remedy == nil || f.Remedy.Action != finding.RemedyDeprecateFirst || f.Remedy.Version != "v1beta1" {
			t.Fatalf("remedy %+v, want %s of v1beta1", f.Remedy, finding.RemedyDeprecateFirst)
		}
		return
	}
	t.Fatalf("no versionLifecycle finding in %q", enginetest.Render(fs))
}
