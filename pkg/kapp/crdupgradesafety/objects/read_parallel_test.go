package objects

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// TestReadParallelMatchesSequential: a batch large enough to be read and
// validated in parallel (Read, inChunks) gives the findings, impacts and
// examples of a sequential read, objects in the same order, with CEL rules,
// rejections, ratcheting and pruning.
func TestReadParallelMatchesSequential(t *testing.T) {
	var objs []map[string]any
	for i := range 1000 {
		spec := map[string]any{"amount": int64(i * 10_000_000), "size": []string{"s", "medium", "xl"}[i%3]}
		if i%7 == 0 {
			spec["gone"] = "x"
		}
		objs = append(objs, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%04d", i), "namespace": "default"}, "spec": spec})
	}
	oldSpec := `{type: object, properties: {amount: {type: integer, format: int64}, size: {type: string}, gone: {type: string}}}`
	newSpec := `{type: object, properties: {amount: {type: integer, format: int32}, size: {type: string, maxLength: 4}},
	  x-kubernetes-validations: [{rule: "self.size != 'xl'"}]}`
	cfg := config.Default()
	run := func(procs int) []string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		_, lines := readImpact(t, oldSpec, newSpec, objs, &cfg)
		return lines
	}
	seq, par := run(1), run(4)
	if len(seq) < 3 {
		t.Fatalf("only %d findings: the case reads too little", len(seq))
	}
	if !slices.Equal(seq, par) {
		t.Errorf("sequential:\n%v\nparallel:\n%v", seq, par)
	}
}
