package objects

import (
	"reflect"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestNoObjectsRead: for every testdata pair and version to read, the
// impact of a version without objects (NoObjectsRead, which builds no
// schema) is the Result of a reader that read none, and the findings
// joined to it are the same.
func TestNoObjectsRead(t *testing.T) {
	cfg := config.Default()
	n := 0
	for _, pair := range testcrd.Pairs(t, "../testdata") { // the engine's golden cases
		dir, oldCRD, newCRD := pair.Dir, pair.Old, pair.New
		findings := checks.Compare(oldCRD, newCRD, &cfg)
		for _, v := range VersionsToRead(oldCRD, newCRD) {
			r, err := NewObjectReader(oldCRD, newCRD, v, finding.SourceCluster, findings, &cfg)
			if err != nil {
				continue // a schema the apiserver refuses: NoObjectsRead is not asked
			}
			want := r.Result()
			got, err := NoObjectsRead(newCRD, v, finding.SourceCluster, findings, &cfg)
			if err != nil {
				t.Fatalf("%s %s: %v", dir, v, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: NoObjectsRead %+v, a reader that read nothing %+v", dir, v, got, want)
			}
			if a, b := finding.ApplyImpacts(findings, []finding.VersionImpact{got}, &cfg), finding.ApplyImpacts(findings, []finding.VersionImpact{want}, &cfg); !reflect.DeepEqual(a, b) {
				t.Errorf("%s %s: findings joined differently", dir, v)
			}
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d versions compared", n)
	}
	if _, err := NoObjectsRead(&apiextv1.CustomResourceDefinition{}, "v9", finding.SourceCluster, nil, &cfg); err == nil {
		t.Error("no error for a version the CRD lacks")
	}
}
