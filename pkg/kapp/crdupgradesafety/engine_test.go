package crdupgradesafety

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// memoryObjects is a source of stored objects held in memory, by version.
type memoryObjects struct {
	byVersion map[string][]map[string]any
	err       error
}

func (m memoryObjects) Source() string { return finding.SourceCluster }
func (m memoryObjects) Eager() bool    { return false }
func (m memoryObjects) List(_ context.Context, _ *apiextv1.CustomResourceDefinition, version string,
	read func([]map[string]any) error) error {
	if m.err != nil {
		return m.err
	}
	if objs := m.byVersion[version]; len(objs) > 0 {
		return read(objs)
	}
	return nil
}

// TestJudgeWithoutObjectsIsCompare: for every golden case, the one call
// per pair with no source of objects (what Compare is) finds what the
// checks find (checks.Compare), judged alike.
func TestJudgeWithoutObjectsIsCompare(t *testing.T) {
	for _, c := range prooftest.GoldenCases(t) {
		old := enginetest.ParseCRDStrict(t, c.Dir+"/old.yaml", c.Old)
		new := enginetest.ParseCRDStrict(t, c.Dir+"/new.yaml", c.New)
		cfg := caseConfig(t, c)
		got, err := Judge(context.Background(), Pair{Old: old, New: new}, cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if want := checks.Compare(old, new, cfg); !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
			t.Errorf("%s: Judge\n%s\nCompare\n%s", c.Name, enginetest.GoldenText(got), enginetest.GoldenText(want))
		}
	}
}

// TestJudgeReadsObjects: the one call reads the stored objects of its
// source at the versions whose schema changed, joins their impact to the
// findings in one policy, and says a version it could not read through
// the conversion webhook unreadable.
func TestJudgeReadsObjects(t *testing.T) {
	old, new := enginetest.CRDWithField(t, `{type: integer, maximum: 10}`), enginetest.CRDWithField(t, `{type: integer, maximum: 5}`)
	objs := memoryObjects{byVersion: map[string][]map[string]any{"v1": {
		enginetest.Widget("v1", "ns", "seven", map[string]any{"x": int64(7)}),
		enginetest.Widget("v1", "ns", "three", map[string]any{"x": int64(3)}),
	}}}
	cfg := config.Default()
	before := finding.PoliciesMade()
	fs, err := Judge(context.Background(), Pair{Old: old, New: new}, &cfg, objs)
	if err != nil {
		t.Fatal(err)
	}
	if n := finding.PoliciesMade() - before; n != 1 {
		t.Errorf("one pair entered %d policies, want 1", n)
	}
	if len(fs) != 1 || fs[0].Check != config.CheckMaximum || fs[0].Impact == nil || fs[0].Impact.Objects != 2 || fs[0].Impact.Affected != 1 {
		t.Fatalf("want one maximum finding affecting 1 of 2 objects, got %s", enginetest.GoldenText(fs))
	}

	unreadable := memoryObjects{err: &UnreadableError{Webhook: "service ns/conv", Err: errors.New("connection refused")}}
	fs, err = Judge(context.Background(), Pair{Old: old, New: new}, &cfg, unreadable)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Check)
	}
	if !reflect.DeepEqual(ids, []string{config.CheckExistingResources, config.CheckMaximum}) {
		t.Errorf("an unreadable version: want an existingResources finding beside maximum, got %s", enginetest.GoldenText(fs))
	}

	if _, err := Judge(context.Background(), Pair{Old: old, New: new}, &cfg, memoryObjects{err: errors.New("forbidden")}); err == nil {
		t.Error("a read that fails otherwise is an error")
	}
}
