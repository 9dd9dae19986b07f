package crdupgradesafety

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestNoObjectsRead: for every testdata pair and version to read, the
// impact of a version without objects (NoObjectsRead, which builds no
// schema) is the Result of a reader that read none, and the findings
// joined to it are the same.
func TestNoObjectsRead(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	n := 0
	for _, dir := range dirs {
		oldCRD, okOld := readTestCRD(t, filepath.Join(dir, "old.yaml"))
		newCRD, okNew := readTestCRD(t, filepath.Join(dir, "new.yaml"))
		if !okOld || !okNew {
			continue
		}
		findings := Compare(oldCRD, newCRD, &cfg)
		for _, v := range VersionsToRead(oldCRD, newCRD) {
			r, err := NewObjectReader(oldCRD, newCRD, v, SourceCluster, findings, &cfg)
			if err != nil {
				continue // a schema the apiserver refuses: NoObjectsRead is not asked
			}
			want := r.Result()
			got, err := NoObjectsRead(newCRD, v, SourceCluster, findings, &cfg)
			if err != nil {
				t.Fatalf("%s %s: %v", dir, v, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: NoObjectsRead %+v, a reader that read nothing %+v", dir, v, got, want)
			}
			if a, b := ApplyImpacts(findings, []VersionImpact{got}, &cfg), ApplyImpacts(findings, []VersionImpact{want}, &cfg); !reflect.DeepEqual(a, b) {
				t.Errorf("%s %s: findings joined differently", dir, v)
			}
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d versions compared", n)
	}
	if _, err := NoObjectsRead(&apiextv1.CustomResourceDefinition{}, "v9", SourceCluster, nil, &cfg); err == nil {
		t.Error("no error for a version the CRD lacks")
	}
}

func readTestCRD(t *testing.T, path string) (*apiextv1.CustomResourceDefinition, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil || crd.Kind != "CustomResourceDefinition" {
		return nil, false
	}
	return crd, true
}
