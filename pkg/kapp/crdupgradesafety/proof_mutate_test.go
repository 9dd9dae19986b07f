package crdupgradesafety

// The schema mutations of the no-false-negatives proof (proof_test.go):
// the kinds of change real CRD upgrades make, applied at a random position
// of a real CRD's schema: bounds tightened and loosened, enum values added
// and removed, fields made required, types changed, properties removed and
// added, patterns and formats added or edited, list and map types changed,
// preserve-unknown-fields toggled, combinator branches added and edited,
// CEL rules added and edited, defaults, nullable, embedded resources and
// constraints on metadata. The caller keeps only mutated CRDs the
// apiserver accepts as an update.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/prooftest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestNoFalseNegativesMutations runs the proof over random mutations of
// the real CRDs (hack/fetch-crds.sh), each object aimed at the mutated
// field. Mutations the apiserver would refuse as a CRD update are skipped.
func TestNoFalseNegativesMutations(t *testing.T) {
	files := enginetest.RealCRDFiles(t)
	r := rand.New(rand.NewPCG(5, 6))
	var total proofStats
	kinds := map[string]int{}
	refused := 0
	for _, f := range files {
		raw, crd := enginetest.ReadRealCRD(t, f)
		// The apiserver's CRD validation and CEL compilation dominate the
		// cost: fewer mutations of the largest CRDs.
		perFile := 4
		switch {
		case len(raw) > 400_000:
			perFile = 2
		case len(raw) > 100_000:
			perFile = 3
		}
		served := map[string]*prooftest.ServedSchema{}
		for range perFile {
			mutated, version, path, kind, desc := prooftest.MutateCRD(r, crd)
			if mutated == nil {
				continue
			}
			// Only the mutated version changes: prove it alone.
			old, new := prooftest.SingleVersion(crd, version), prooftest.SingleVersion(mutated, version)
			if errs := apivalidation.ValidateCRD(context.Background(), old, new); len(errs) > 0 {
				refused++
				continue
			}
			kinds[kind]++
			_, focus := enginetest.SplitCombinators(path)
			p := &proofRun{tb: t, name: fmt.Sprintf("%s: %s at %s", f, desc, path), old: old, new: new, r: r,
				focus: focus, objects: 40, maxMisses: 1, served: served}
			p.run()
			total.add(p.stats)
		}
	}
	t.Logf("mutations: %s; %d mutations refused by the apiserver; kinds: %v", total, refused, kinds)
}

// FuzzNoFalseNegatives runs the proof for longer: each input picks a
// source pair (a golden case, or a real CRD with itself when
// hack/fetch-crds.sh has run), applies up to three random mutations to its
// new side, and proves the pair with objects aimed at the last mutated
// field. The seed corpus is a few golden cases; go test runs only those.
//
//	go test -run '^$' -fuzz FuzzNoFalseNegatives -fuzztime 10m ./pkg/kapp/crdupgradesafety/
func FuzzNoFalseNegatives(f *testing.F) {
	type source struct {
		name     string
		old, new *apiextv1.CustomResourceDefinition
	}
	var sources []source
	for _, c := range prooftest.GoldenCases(f) {
		sources = append(sources, source{c.Name,
			enginetest.ParseCRDStrict(f, c.Dir+"/old.yaml", c.Old), enginetest.ParseCRDStrict(f, c.Dir+"/new.yaml", c.New)})
	}
	if dir, ok := enginetest.RealCRDDirIfPresent(f); ok {
		for _, rel := range enginetest.RealCRDFilesIn(f, dir) {
			b, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				f.Fatal(err)
			}
			crd := enginetest.ParseRealCRD(f, rel, b)
			sources = append(sources, source{rel, crd, crd})
		}
	}
	for i := 0; i < len(sources) && i < 160; i += 20 {
		f.Add(uint16(i), uint64(i), uint8(1))
	}
	f.Fuzz(func(t *testing.T, index uint16, seed uint64, mutations uint8) {
		src := sources[int(index)%len(sources)]
		r := rand.New(rand.NewPCG(seed, uint64(index)))
		new, focus, name := src.new, "", src.name
		var version string
		for range int(mutations % 4) {
			mutated, v, path, _, desc := prooftest.MutateCRD(r, new)
			if mutated == nil {
				continue
			}
			new, version = mutated, v
			_, focus = enginetest.SplitCombinators(path)
			name += "; " + desc + " at " + v + " " + path
		}
		old := src.old
		if version != "" {
			old, new = prooftest.SingleVersion(old, version), prooftest.SingleVersion(new, version)
			if checks.VersionsByName(old)[version] == nil {
				return // a golden case's new version
			}
		}
		if len(apivalidation.ValidateCRD(context.Background(), old, new)) > 0 {
			return // the apiserver would refuse the update
		}
		p := &proofRun{tb: t, name: name, old: old, new: new, r: r, focus: focus, objects: 20, maxMisses: 3}
		p.run()
	})
}
