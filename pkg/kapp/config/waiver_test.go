package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func day(s string) time.Time {
	t, err := time.Parse(config.DateFormat, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWaiversOf(t *testing.T) {
	const crd = "widgets.example.com"
	waive := func(checks, reason string) map[string]string {
		return map[string]string{config.WaiveAnnotation: checks, config.WaiveReasonAnnotation: reason,
			"kapp.k14s.io/identity": "v1;/apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com;apiextensions.k8s.io/v1"}
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	annotation := func(w config.Waiver) config.Waiver {
		w.CRD, w.Source = crd, config.SourceAnnotation
		return w
	}
	tests := []struct {
		name        string
		annotations map[string]string
		want        []config.Waiver
		wantErr     string // after "CRD widgets.example.com: invalid waiver annotation: "
	}{
		{name: "no annotations"},
		{name: "other annotations only", annotations: map[string]string{"kapp.k14s.io/update-strategy": "skip"}},
		{name: "checks and reason", annotations: waive("enum,required", "values renamed, PR 123"),
			want: []config.Waiver{annotation(config.Waiver{Checks: []string{"enum", "required"}, Reason: "values renamed, PR 123"})}},
		{name: "spaces, empty items and repeats are tolerated", annotations: waive(" enum , ,enum,crdDeletion ", "  reviewed  "),
			want: []config.Waiver{annotation(config.Waiver{Checks: []string{"enum", "crdDeletion"}, Reason: "reviewed"})}},
		{name: "fingerprints, expiry and owner",
			annotations: with(waive("enum", "reviewed"), config.WaiveFingerprintsAnnotation, "1a2b3c4d5e6f, 0123456789ab,1a2b3c4d5e6f",
				config.WaiveExpiresAnnotation, "2026-12-31", config.WaiveOwnerAnnotation, " team-widgets "),
			want: []config.Waiver{
				annotation(config.Waiver{Checks: []string{"enum"}, Reason: "reviewed", Expires: day("2026-12-31"), Owner: "team-widgets"}),
				annotation(config.Waiver{Fingerprint: "1a2b3c4d5e6f", Reason: "reviewed", Expires: day("2026-12-31"), Owner: "team-widgets"}),
				annotation(config.Waiver{Fingerprint: "0123456789ab", Reason: "reviewed", Expires: day("2026-12-31"), Owner: "team-widgets"}),
			}},
		{name: "fingerprints alone", annotations: map[string]string{config.WaiveFingerprintsAnnotation: "1a2b3c4d5e6f", config.WaiveReasonAnnotation: "r"},
			want: []config.Waiver{annotation(config.Waiver{Fingerprint: "1a2b3c4d5e6f", Reason: "r"})}},
		{name: "reason missing", annotations: map[string]string{config.WaiveAnnotation: "enum"},
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive requires crd-upgrade-safety.kapp.k14s.io/waive-reason"},
		{name: "reason missing with fingerprints", annotations: map[string]string{config.WaiveFingerprintsAnnotation: "1a2b3c4d5e6f"},
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive-fingerprints requires crd-upgrade-safety.kapp.k14s.io/waive-reason"},
		{name: "reason blank", annotations: waive("enum", " \n"),
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive requires crd-upgrade-safety.kapp.k14s.io/waive-reason"},
		{name: "reason alone", annotations: map[string]string{config.WaiveReasonAnnotation: "why"},
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive-reason without crd-upgrade-safety.kapp.k14s.io/waive or crd-upgrade-safety.kapp.k14s.io/waive-fingerprints"},
		{name: "expiry alone", annotations: map[string]string{config.WaiveExpiresAnnotation: "2026-12-31"},
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive-expires without crd-upgrade-safety.kapp.k14s.io/waive or"},
		{name: "bad date", annotations: with(waive("enum", "why"), config.WaiveExpiresAnnotation, "31.12.2026"),
			wantErr: `crd-upgrade-safety.kapp.k14s.io/waive-expires: invalid date "31.12.2026": must be YYYY-MM-DD`},
		{name: "bad fingerprint", annotations: with(waive("enum", "why"), config.WaiveFingerprintsAnnotation, "1A2B3C4D5E6F"),
			wantErr: `crd-upgrade-safety.kapp.k14s.io/waive-fingerprints: "1A2B3C4D5E6F" is not a fingerprint (12 hex digits`},
		{name: "no fingerprint named", annotations: with(waive("enum", "why"), config.WaiveFingerprintsAnnotation, " , "),
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive-fingerprints names no fingerprint"},
		{name: "no check named", annotations: waive(" , ", "why"),
			wantErr: "crd-upgrade-safety.kapp.k14s.io/waive names no check"},
		{name: "unknown check", annotations: waive("enum,enums", "why"),
			wantErr: `crd-upgrade-safety.kapp.k14s.io/waive: unknown check ID "enums" (allowed: additionalProperties, allOf,`},
		{name: "apiserverRejects", annotations: waive("apiserverRejects", "why"),
			wantErr: "apiserverRejects cannot be waived"},
		{name: "staleWaiver", annotations: waive("staleWaiver", "why"),
			wantErr: `crd-upgrade-safety.kapp.k14s.io/waive: unknown check ID "staleWaiver"`},
		{name: "misspelt key", annotations: map[string]string{config.WaivePrefix + "waiver": "enum", config.WaiveReasonAnnotation: "why"},
			wantErr: "unknown annotation crd-upgrade-safety.kapp.k14s.io/waiver (allowed: crd-upgrade-safety.kapp.k14s.io/waive, crd-upgrade-safety.kapp.k14s.io/waive-expires, " +
				"crd-upgrade-safety.kapp.k14s.io/waive-fingerprints, crd-upgrade-safety.kapp.k14s.io/waive-owner, crd-upgrade-safety.kapp.k14s.io/waive-reason)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.WaiversOf(crd, tt.annotations)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, config.ErrInvalidWaiver)
				require.ErrorContains(t, err, "CRD widgets.example.com: invalid waiver annotation: "+tt.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestWaiverMatches: the one matcher of every waiver, wherever it was given.
func TestWaiverMatches(t *testing.T) {
	subject := config.WaiverSubject{CRD: "widgets.example.com", Check: "maximum", Path: "^.spec.replicas", Fingerprint: "1a2b3c4d5e6f"}
	crdLevel := config.WaiverSubject{CRD: "widgets.example.com", Check: "scope", Fingerprint: "0123456789ab"}
	tests := []struct {
		name       string
		w          config.Waiver
		want       bool
		wantCRDLvl bool
	}{
		{"fingerprint", config.Waiver{Fingerprint: "1a2b3c4d5e6f"}, true, false},
		{"fingerprint of another finding", config.Waiver{Fingerprint: "ffffffffffff"}, false, false},
		{"fingerprint with its CRD", config.Waiver{Fingerprint: "1a2b3c4d5e6f", CRD: "widgets.example.com"}, true, false},
		{"fingerprint with another CRD", config.Waiver{Fingerprint: "1a2b3c4d5e6f", CRD: "gadgets.example.com"}, false, false},
		{"CRD: every check", config.Waiver{CRD: "widgets.example.com"}, true, true},
		{"another CRD", config.Waiver{CRD: "gadgets.example.com"}, false, false},
		{"no CRD, no fingerprint: nothing", config.Waiver{Checks: []string{"maximum"}}, false, false},
		{"check", config.Waiver{CRD: "widgets.example.com", Checks: []string{"enum", "maximum"}}, true, false},
		{"another check", config.Waiver{CRD: "widgets.example.com", Checks: []string{"enum"}}, false, false},
		{"exact path", config.Waiver{CRD: "widgets.example.com", Path: "^.spec.replicas"}, true, false},
		{"path pattern", config.Waiver{CRD: "widgets.example.com", Path: "^.spec.*"}, true, false},
		{"pattern in the middle", config.Waiver{CRD: "widgets.example.com", Path: "^.*.replicas"}, true, false},
		{"pattern: prefix only", config.Waiver{CRD: "widgets.example.com", Path: "^.spec.rep"}, false, false},
		{"pattern of another field", config.Waiver{CRD: "widgets.example.com", Path: "^.status.*"}, false, false},
		{"star alone", config.Waiver{CRD: "widgets.example.com", Path: "^*"}, true, false},
		{"everything combined", config.Waiver{Fingerprint: "1a2b3c4d5e6f", CRD: "widgets.example.com", Checks: []string{"maximum"}, Path: "^.spec.*"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.w.Matches(subject))
			require.Equal(t, tt.wantCRDLvl, tt.w.Matches(crdLevel))
		})
	}
}

// TestWaive: the first waiver in force wins; an expired one is reported
// only when no other matches; an expiry lasts to the end of its day, UTC.
func TestWaive(t *testing.T) {
	s := config.WaiverSubject{CRD: "widgets.example.com", Check: "enum", Path: "^.spec.size", Fingerprint: "1a2b3c4d5e6f"}
	expiring := config.Waiver{CRD: "widgets.example.com", Reason: "until the migration", Expires: day("2026-03-31")}
	forever := config.Waiver{Fingerprint: "1a2b3c4d5e6f", Reason: "reviewed"}
	cfg := config.Default()
	cfg.Waivers = []config.Waiver{expiring}

	for _, tc := range []struct {
		now         string
		wantExpired bool
	}{
		{"2026-03-31T00:00:00Z", false},
		{"2026-03-31T23:59:59Z", false},
		{"2026-04-01T01:59:59+02:00", false}, // still the 31st, UTC
		{"2026-04-01T00:00:00Z", true},
		{"2027-01-01T00:00:00Z", true},
	} {
		now, err := time.Parse(time.RFC3339, tc.now)
		require.NoError(t, err)
		cfg.Now = now
		w, expired := cfg.Waive(s)
		require.Equal(t, &cfg.Waivers[0], w, tc.now)
		require.Equal(t, tc.wantExpired, expired, tc.now)
	}

	cfg.Waivers = []config.Waiver{expiring, forever}
	w, expired := cfg.Waive(s)
	require.False(t, expired)
	require.Equal(t, "reviewed", w.Reason, "the one in force wins over the expired one before it")

	cfg.Waivers = nil
	w, expired = cfg.Waive(s)
	require.Nil(t, w)
	require.False(t, expired)
}

// WithWaivers adds to a copy: the settings it is called on, shared by the
// runs of a webhook, keep their own waivers.
func TestWithWaivers(t *testing.T) {
	cfg := config.Default()
	cfg.Waivers = make([]config.Waiver, 1, 4) // room to append in place
	cfg.Waivers[0] = config.Waiver{CRD: "a.example.com"}
	require.Same(t, &cfg, cfg.WithWaivers(nil))
	w := config.Waiver{CRD: "b.example.com", Checks: []string{"enum"}}
	got := cfg.WithWaivers([]config.Waiver{w})
	require.Equal(t, []config.Waiver{{CRD: "a.example.com"}, w}, got.Waivers)
	require.Len(t, cfg.Waivers, 1)
	require.Equal(t, cfg.Waivers[:2:2][1], config.Waiver{}, "appended into the original's backing array")
	ok, _ := got.Waive(config.WaiverSubject{CRD: "b.example.com", Check: "enum"})
	require.NotNil(t, ok)
}
