package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestAlphaVersionEnforcement(t *testing.T) {
	str := `{type: object, properties: {x: {type: string}}}`
	integer := `{type: object, properties: {x: {type: integer}}}`
	lenient := func(c *config.Settings) { c.AlphaVersionEnforcement = config.EnforcementWarn }
	const note = " (alpha version: a warning under alphaVersionEnforcement Warn)"
	typeChanged := `type changed: "string" -> "integer"`

	runCRDCases(t, []crdCase{
		// Property findings of one version.
		{name: "alpha, Strict (default): an error",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: integer}),
			want: []string{"error type v1alpha1 ^.spec.x: " + typeChanged}},
		{name: "alpha, Warn: a warning that says why",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: integer}),
			config: lenient, want: []string{"warning type v1alpha1 ^.spec.x: " + typeChanged + note}},
		{name: "beta stays strict",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: true, Spec: integer}),
			config: lenient, want: []string{"error type v1beta1 ^.spec.x: " + typeChanged}},
		{name: "GA stays strict",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: integer}),
			config: lenient, want: []string{"error type v1 ^.spec.x: " + typeChanged}},
		{name: "a name that only looks alpha stays strict",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha", Served: true, Storage: true, Spec: integer}),
			config: lenient, want: []string{"error type v1alpha ^.spec.x: " + typeChanged}},
		{name: "alpha field removed, no objects read: a warning",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: `{type: object}`}),
			config: lenient, want: []string{"warning existingFieldRemoval v1alpha1 ^.spec.x: data loss: existing field removed (was string)" + note}},
		{name: "a Warn change stays a warning, without the note",
			old:    enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: `{type: object, properties: {m: {type: object}}}`}),
			new:    enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: `{type: object, properties: {m: {type: object, x-kubernetes-map-type: atomic}}}`}),
			config: lenient, want: []string{`warning mapType v1alpha1 ^.spec.m: x-kubernetes-map-type changed: granular -> atomic: no stored object becomes invalid, only server-side apply ownership changes`}},
		{name: "mode warn: a warning, without the note",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: integer}),
			config: func(c *config.Settings) { lenient(c); c.Mode = config.ModeWarn },
			want:   []string{"warning type v1alpha1 ^.spec.x: " + typeChanged}},
		{name: "an exemption is what waived it",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}), new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: integer}),
			config: func(c *config.Settings) {
				lenient(c)
				c.Waivers = []config.Waiver{{CRD: enginetest.TestCRDName, Reason: "PR 5"}}
			},
			want: []string{"warning type v1alpha1 ^.spec.x: " + typeChanged + " (exempted: PR 5)"}},

		// Version-level findings.
		{name: "alpha served version removed: servedVersionRemoval a warning, versionLifecycle a warning anyway",
			old: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: ""}, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), enginetest.WithStoredVersions("v1")),
			new: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), enginetest.WithStoredVersions("v1")),
			config: func(c *config.Settings) {
				lenient(c)
				c.Checks.CRD.VersionLifecycle.NotDeprecatedEnforcement = config.EnforcementStrict
			},
			want: []string{
				`warning servedVersionRemoval v1alpha1 : served version "v1alpha1" removed without first being set served: false` + note,
				`warning versionLifecycle v1alpha1 : served version "v1alpha1" removed without a release that marked it deprecated: true` + note,
			}},
		{name: "beta served version removed: errors",
			old: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1beta1", Served: true, Storage: false, Spec: ""}, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), enginetest.WithStoredVersions("v1")),
			new: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), enginetest.WithStoredVersions("v1")),
			config: func(c *config.Settings) {
				lenient(c)
				c.Checks.CRD.VersionLifecycle.NotDeprecatedEnforcement = config.EnforcementStrict
			},
			want: []string{
				`error servedVersionRemoval v1beta1 : served version "v1beta1" removed without first being set served: false`,
				`error versionLifecycle v1beta1 : served version "v1beta1" removed without a release that marked it deprecated: true`,
			}},
		{name: "alpha stored version removed: the stored objects are data, an error",
			old: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: false, Storage: false, Spec: ""}, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), enginetest.WithStoredVersions("v1alpha1", "v1")),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: ""}), config: lenient,
			want: []string{`error storedVersionRemoval v1alpha1 : data loss: stored version "v1alpha1" removed: objects stored in it must be migrated first`}},

		// CRD-level findings.
		{name: "scope of a CRD with only alpha versions: an error",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: ""}), new: enginetest.With(enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: ""}), enginetest.WithScope(apiextv1.ClusterScoped)),
			config: lenient, want: []string{"error scope  : scope changed: Namespaced -> Cluster"}},

		// Pairs of served versions (conversion None).
		{name: "two alpha versions differ: a warning",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: true, Spec: str}, enginetest.TestVersion{Name: "v1alpha2", Served: true, Storage: false, Spec: integer}), config: lenient,
			want: []string{"warning servedVersion v1alpha1 -> v1alpha2 ^.spec.x: [type] " + typeChanged + note}},
		{name: "an alpha and a GA version differ: an error (the GA view of the same objects)",
			old: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: str}),
			new: enginetest.NewCRD(t, enginetest.TestVersion{Name: "v1", Served: true, Storage: true, Spec: str}, enginetest.TestVersion{Name: "v1alpha1", Served: true, Storage: false, Spec: integer}), config: lenient,
			want: []string{"error servedVersion v1alpha1 -> v1 ^.spec.x: [type] " + `type changed: "integer" -> "string"`}},
	})
}
