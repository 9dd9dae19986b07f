package crdupgradesafety

import (
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// readImpact compares two versions v1 of the widget CRD (spec schemas old
// and new), reads objs under them as stored objects, and returns the
// findings with their impact as "severity check field: message" lines.
func readImpact(t *testing.T, oldSpec, newSpec string, objs []map[string]any, cfg *config.Settings) ([]Finding, []string) {
	t.Helper()
	oldCRD := newCRD(t, testVersion{"v1", true, true, oldSpec})
	newCRD := newCRD(t, testVersion{"v1", true, true, newSpec})
	findings := Compare(oldCRD, newCRD, cfg)
	var impacts []VersionImpact
	for _, v := range VersionsToRead(oldCRD, newCRD) {
		r, err := NewObjectReader(oldCRD, newCRD, v, SourceCluster, findings, cfg)
		require.NoError(t, err)
		r.Read(listed(t, oldCRD, v, objs))
		impacts = append(impacts, r.Result())
	}
	out := ApplyImpacts(findings, impacts, cfg)
	lines := make([]string, len(out))
	for i, f := range out {
		lines[i] = fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, f.Field, testMessage(f))
	}
	return out, lines
}

// listed returns objs as the apiserver lists them under crd: read from
// etcd, pruned and defaulted under the CRD's schema of version.
func listed(t *testing.T, crd *apiextv1.CustomResourceDefinition, version string, objs []map[string]any) []map[string]any {
	t.Helper()
	internal, err := internalSchemaOf(versionSchema(versionsByName(crd)[version]))
	require.NoError(t, err)
	s, err := structuralschema.NewStructural(internal)
	require.NoError(t, err)
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = deepCopyJSON(o).(map[string]any)
		readAs(out[i], s, !crd.Spec.PreserveUnknownFields)
	}
	return out
}
