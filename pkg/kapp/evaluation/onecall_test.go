package evaluation

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"
	"sigs.k8s.io/yaml"
)

// examplePair is examples/crd-upgrade's unsafe release (crd-v1.yaml ->
// crd-v3-unsafe.yaml) with widgets.yaml as the stored objects.
func examplePair(t *testing.T) Pair {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile("../../../examples/crd-upgrade/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	p := Pair{Old: testcrd.MustCRD(t, read("crd-v1.yaml")), New: testcrd.MustCRD(t, read("crd-v3-unsafe.yaml"))}
	for _, doc := range strings.Split(read("widgets.yaml"), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		p.Samples = append(p.Samples, obj)
	}
	return p
}

// TestPolicyEntriesPerPair counts the policies one evaluation of one pair
// enters (finding.PoliciesMade): the engine's one call per pair judges it
// in one policy (before the one call: 5 for this request, 2 of them the
// reader's lists, 1 ApplyImpacts', 1 StaleWaivers').
func TestPolicyEntriesPerPair(t *testing.T) {
	cfg := config.Default()
	before := finding.PoliciesMade()
	res, err := Run(context.Background(), Request{Plan: Plan{Pairs: []Pair{examplePair(t)}}, Settings: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	n := finding.PoliciesMade() - before
	t.Logf("one evaluation of examples/crd-upgrade (v1 -> v3-unsafe, 2 samples): %d findings, %d policies entered", len(res.Findings), n)
	if len(res.Findings) == 0 {
		t.Fatal("no findings: the example is unsafe")
	}
	if n != 1 {
		t.Errorf("one pair entered %d policies, want 1 (its comparison, readers and judgement share it)", n)
	}
}
