package config_test

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

func TestDecodeAcceptDataLoss(t *testing.T) {
	entry := func(kv ...any) map[string]any {
		m := map[string]any{"crd": "widgets.example.com", "check": "existingFieldRemoval", "version": "v1", "path": "^.spec.color",
			"objects": 3, "reason": "colors retired in PR 9", "expires": "2026-12-31"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	cfg, err := config.Decode(map[string]any{"acceptDataLoss": []any{entry("owner", " team-a "), entry("check", "crdDeletion", "version", nil, "path", nil, "objects", 0)}})
	require.NoError(t, err)
	require.Equal(t, []config.Acceptance{
		{CRD: "widgets.example.com", Check: "existingFieldRemoval", Version: "v1", Path: "^.spec.color", Objects: 3,
			Reason: "colors retired in PR 9", Expires: day("2026-12-31"), Owner: "team-a"},
		{CRD: "widgets.example.com", Check: "crdDeletion", Reason: "colors retired in PR 9", Expires: day("2026-12-31")},
	}, cfg.AcceptDataLoss)
	require.Empty(t, cfg.Waivers, "an acceptance is no waiver")

	for _, tc := range []struct {
		name  string
		entry map[string]any
		kind  error
		want  string
	}{
		{"reason missing", entry("reason", nil), config.ErrMissingKey, "acceptDataLoss[0].reason: required: say why losing this data is acceptable"},
		{"reason blank", entry("reason", "  "), config.ErrMissingKey, "acceptDataLoss[0].reason: required"},
		{"expires missing", entry("expires", nil), config.ErrMissingKey, "acceptDataLoss[0].expires: required: the last day the acceptance applies"},
		{"objects missing", entry("objects", nil), config.ErrMissingKey, "acceptDataLoss[0].objects: required"},
		{"crd missing", entry("crd", nil), config.ErrMissingKey, "acceptDataLoss[0].crd: required"},
		{"check missing", entry("check", nil), config.ErrMissingKey, "acceptDataLoss[0].check: required"},
		{"a bad date", entry("expires", "31.12.2026"), config.ErrInvalidValue, `acceptDataLoss[0].expires: invalid date "31.12.2026": must be YYYY-MM-DD`},
		{"a negative count", entry("objects", -1), config.ErrInvalidValue, "acceptDataLoss[0].objects: must be an integer >= 0, got -1"},
		{"a count that is no number", entry("objects", "all"), config.ErrInvalidType, "acceptDataLoss[0].objects: must be an integer, got string"},
		{"an unknown check", entry("check", "fieldRemoval"), config.ErrInvalidValue, `acceptDataLoss[0].check: unknown check ID "fieldRemoval"`},
		{"apiserverRejects", entry("check", "apiserverRejects"), config.ErrInvalidValue, `acceptDataLoss[0].check: apiserverRejects cannot be waived`},
		{"a path without ^", entry("path", ".spec.color"), config.ErrInvalidValue, `acceptDataLoss[0].path: ".spec.color" is not a schema path`},
		{"an unknown key", entry("fingerprint", "1a2b3c4d5e6f"), config.ErrUnknownKey,
			"acceptDataLoss[0].fingerprint: unknown key (allowed: check, crd, expires, objects, owner, path, reason, version)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Decode(map[string]any{"acceptDataLoss": []any{tc.entry}})
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.kind), "%v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = config.Decode(map[string]any{"acceptDataLoss": map[string]any{}})
	require.ErrorContains(t, err, "acceptDataLoss: must be a list, got map")
}

func TestDecodeAnnotationWaivers(t *testing.T) {
	cfg, err := config.Decode(nil)
	require.NoError(t, err)
	require.Nil(t, cfg.AnnotationWaivers, "not given: the run's default")
	require.True(t, cfg.AnnotationWaiverAllowed(config.CheckEnum))

	cfg, err = config.Decode(map[string]any{"annotationWaivers": map[string]any{"checks": []any{"enum", "minimum"}}})
	require.NoError(t, err)
	require.Equal(t, &config.AnnotationWaivers{Checks: []string{"enum", "minimum"}}, cfg.AnnotationWaivers)
	require.True(t, cfg.AnnotationWaiverAllowed(config.CheckEnum))
	require.False(t, cfg.AnnotationWaiverAllowed(config.CheckRequired))

	cfg, err = config.Decode(map[string]any{"annotationWaivers": map[string]any{"checks": []any{}}})
	require.NoError(t, err)
	require.False(t, cfg.AnnotationWaiverAllowed(config.CheckEnum), "an empty list: none")

	_, err = config.Decode(map[string]any{"annotationWaivers": map[string]any{"checks": []any{"enum", "typo"}, "all": true}})
	require.ErrorIs(t, err, config.ErrInvalidConfig)
	require.ErrorContains(t, err, "annotationWaivers.all: unknown key (allowed: checks)")
	require.ErrorContains(t, err, `annotationWaivers.checks[1]: unknown check ID "typo"`)
}

func TestAccept(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	a := config.Acceptance{CRD: "w.example.com", Check: "existingFieldRemoval", Version: "v1", Path: "^.spec.color", Objects: 3,
		Reason: "r", Expires: day("2026-11-28")}
	loss := config.LossSubject{CRD: "w.example.com", Check: "existingFieldRemoval", Version: "v1", Path: "^.spec.color", Objects: 3, Counted: true, Live: true}
	cfg := config.Settings{AcceptDataLoss: []config.Acceptance{a}, Now: now}
	for _, tc := range []struct {
		name string
		edit func(s *config.LossSubject, c *config.Settings)
		ok   bool
		gap  config.AcceptanceGap
		none bool
	}{
		{name: "the same loss", ok: true},
		{name: "fewer objects", edit: func(s *config.LossSubject, _ *config.Settings) { s.Objects = 0 }, ok: true},
		{name: "more objects", edit: func(s *config.LossSubject, _ *config.Settings) { s.Objects = 4 }, gap: config.GapMoreObjects},
		{name: "uncounted, live", edit: func(s *config.LossSubject, _ *config.Settings) { s.Counted, s.Objects = false, 0 }, gap: config.GapUncounted},
		{name: "uncounted, offline", edit: func(s *config.LossSubject, _ *config.Settings) { s.Counted, s.Objects, s.Live = false, 0, false }, ok: true},
		{name: "expired", edit: func(_ *config.LossSubject, c *config.Settings) { c.Now = now.AddDate(0, 0, 1) }, gap: config.GapExpired},
		{name: "another path", edit: func(s *config.LossSubject, _ *config.Settings) { s.Path = "^.spec.size" }, none: true},
		{name: "another version", edit: func(s *config.LossSubject, _ *config.Settings) { s.Version = "v2" }, none: true},
		{name: "another check", edit: func(s *config.LossSubject, _ *config.Settings) { s.Check = "storagePruning" }, none: true},
		{name: "another CRD", edit: func(s *config.LossSubject, _ *config.Settings) { s.CRD = "g.example.com" }, none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := loss, cfg
			if tc.edit != nil {
				tc.edit(&s, &c)
			}
			got, gap := c.Accept(s)
			switch {
			case tc.none:
				require.Nil(t, got)
			case tc.ok:
				require.NotNil(t, got)
				require.Empty(t, gap)
			default:
				require.NotNil(t, got)
				require.Equal(t, tc.gap, gap)
			}
		})
	}
}

// TestJudgeWaivers: no waiver waives a loss of stored data; an annotation
// waiver carried over from the old CRD, or of a check annotationWaivers
// does not name, waives nothing; the first usable waiver wins.
func TestJudgeWaivers(t *testing.T) {
	s := config.WaiverSubject{CRD: "w.example.com", Check: "enum", Path: "^.spec.color"}
	settings := config.Waiver{CRD: "w.example.com", Reason: "settings", Source: config.SourceSettings}
	ann := config.Waiver{CRD: "w.example.com", Checks: []string{"enum"}, Reason: "annotation", Source: config.SourceAnnotation}
	carried := ann
	carried.CarriedOver = true
	expired := settings
	expired.Expires = day("2020-01-01")
	none := &config.AnnotationWaivers{Checks: []string{}}
	for _, tc := range []struct {
		name     string
		waivers  []config.Waiver
		allowed  *config.AnnotationWaivers
		dataLoss bool
		waived   string
		refused  config.WaiverRefusal
		expired  bool
	}{
		{name: "a settings waiver", waivers: []config.Waiver{settings}, waived: "settings"},
		{name: "an annotation waiver", waivers: []config.Waiver{ann}, waived: "annotation"},
		{name: "a loss: refused to a settings waiver", waivers: []config.Waiver{settings}, dataLoss: true, refused: config.RefusedDataLoss},
		{name: "a loss: refused to an annotation", waivers: []config.Waiver{ann}, dataLoss: true, refused: config.RefusedDataLoss},
		{name: "carried over", waivers: []config.Waiver{carried}, refused: config.RefusedCarriedOver},
		{name: "annotations not allowed", waivers: []config.Waiver{ann}, allowed: none, refused: config.RefusedAnnotationsNotAllowed},
		{name: "annotations not allowed, a settings waiver still waives", waivers: []config.Waiver{ann, settings}, allowed: none, waived: "settings"},
		{name: "a refused one, then a usable one", waivers: []config.Waiver{carried, settings}, waived: "settings"},
		{name: "expired", waivers: []config.Waiver{expired}, expired: true},
		{name: "a refusal says more than an expiry", waivers: []config.Waiver{expired, carried}, refused: config.RefusedCarriedOver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Settings{Waivers: tc.waivers, AnnotationWaivers: tc.allowed, Now: day("2026-11-28")}
			v := c.JudgeWaivers(s, tc.dataLoss)
			if tc.waived != "" {
				require.NotNil(t, v.Waiver)
				require.Equal(t, tc.waived, v.Waiver.Reason)
				return
			}
			require.Nil(t, v.Waiver)
			require.Equal(t, tc.refused, v.Refusal)
			require.Equal(t, tc.refused != "", v.Refused != nil)
			require.Equal(t, tc.expired, v.Expired != nil)
		})
	}
}

func TestSameWaiverAnnotations(t *testing.T) {
	a := map[string]string{config.WaiveAnnotation: "enum", config.WaiveReasonAnnotation: "r", "other": "1"}
	b := map[string]string{config.WaiveAnnotation: "enum", config.WaiveReasonAnnotation: "r", "other": "2"}
	require.True(t, config.SameWaiverAnnotations(a, b), "other annotations do not count")
	b[config.WaiveReasonAnnotation] = "r2"
	require.False(t, config.SameWaiverAnnotations(a, b), "a changed reason")
	delete(b, config.WaiveReasonAnnotation)
	require.False(t, config.SameWaiverAnnotations(a, b), "a removed one")
	require.False(t, config.SameWaiverAnnotations(nil, a), "added")
	keys := []string{}
	for k := range a {
		if strings.HasPrefix(k, config.WaivePrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	require.Equal(t, []string{config.WaiveAnnotation, config.WaiveReasonAnnotation}, keys)
}
