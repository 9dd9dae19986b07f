package objects

import (
	"fmt"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	"github.com/stretchr/testify/require"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// ImpactOptions vary the CRDs and objects of readImpact.
type ImpactOptions struct {
	// Source: SourceCluster (the default: objs are stored, and listed as
	// the apiserver lists them under the old CRD) or SourceSamples (objs
	// are --objects samples, read as they are).
	Source string
	// OldStatus, NewStatus: the YAML schemas of .status in the old and
	// new CRDs ("": no status property).
	OldStatus, NewStatus string
	// StatusSubresource: both CRDs have the status subresource.
	StatusSubresource bool
	// Version is the name of the one version of both CRDs ("": v1).
	Version string
}

// readImpact compares two versions v1 of the widget CRD (spec schemas old
// and new), reads objs under them as stored objects, and returns the
// findings with their impact as "severity check field: message" lines.
func readImpact(t *testing.T, oldSpec, newSpec string, objs []map[string]any, cfg *config.Settings) ([]finding.Finding, []string) {
	t.Helper()
	return readImpactWith(t, oldSpec, newSpec, objs, cfg, ImpactOptions{})
}

// readImpactWith is readImpact with options.
func readImpactWith(t *testing.T, oldSpec, newSpec string, objs []map[string]any, cfg *config.Settings, opts ImpactOptions) ([]finding.Finding, []string) {
	t.Helper()
	version := opts.Version
	if version == "" {
		version = "v1"
	}
	oldCRD := enginetest.WithStatus(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: version, Served: true, Storage: true, Spec: oldSpec}), opts.OldStatus, opts.StatusSubresource)
	newCRD := enginetest.WithStatus(t, enginetest.NewCRD(t, enginetest.TestVersion{Name: version, Served: true, Storage: true, Spec: newSpec}), opts.NewStatus, opts.StatusSubresource)
	findings := checks.Compare(oldCRD, newCRD, cfg)
	source := opts.Source
	if source == "" {
		source = finding.SourceCluster
	}
	var impacts []finding.VersionImpact
	for _, v := range VersionsToRead(oldCRD, newCRD) {
		r, err := NewObjectReader(oldCRD, newCRD, v, source, findings, cfg)
		require.NoError(t, err)
		if source == finding.SourceCluster {
			r.Read(Listed(t, oldCRD, v, objs))
		} else {
			r.Read(objs)
		}
		impacts = append(impacts, r.Result())
	}
	out := finding.ApplyImpacts(findings, impacts, cfg)
	lines := make([]string, len(out))
	for i, f := range out {
		lines[i] = fmt.Sprintf("%s %s %s: %s", f.Severity, f.Check, f.Field, enginetest.Message(f))
	}
	return out, lines
}

// listed returns objs as the apiserver lists them under crd: read from
// etcd, pruned and defaulted under the CRD's schema of version.
func Listed(t *testing.T, crd *apiextv1.CustomResourceDefinition, version string, objs []map[string]any) []map[string]any {
	t.Helper()
	internal, err := internalSchemaOf(checks.VersionSchema(checks.VersionsByName(crd)[version]))
	require.NoError(t, err)
	s, err := structuralschema.NewStructural(internal)
	require.NoError(t, err)
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = finding.DeepCopyJSON(o).(map[string]any)
		readAs(out[i], s, !crd.Spec.PreserveUnknownFields)
	}
	return out
}
