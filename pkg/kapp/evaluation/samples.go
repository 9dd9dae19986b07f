package evaluation

import (
	"context"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// samples is the sample custom resources of an updated CRD (Pair.Samples)
// as the engine reads stored objects (crdupgradesafety.Objects), by the
// version of their apiVersion; nil when the pair is a create, has no
// samples or existingResources is disabled (nothing is read).
func samples(p Pair, cfg *config.Settings) crdupgradesafety.Objects {
	if p.Old == nil || len(p.Samples) == 0 || !cfg.Checks.CRD.ExistingResources.Enabled {
		return nil
	}
	byVersion := map[string][]map[string]any{}
	for _, obj := range p.Samples {
		v := SampleVersion(obj)
		byVersion[v] = append(byVersion[v], obj)
	}
	return sampleObjects(byVersion)
}

// sampleObjects are sample objects by version: one batch per version,
// every version read given its reader (Eager), with or without samples.
type sampleObjects map[string][]map[string]any

func (s sampleObjects) Source() string { return finding.SourceSamples }

func (s sampleObjects) Eager() bool { return true }

func (s sampleObjects) List(_ context.Context, _ *apiextv1.CustomResourceDefinition, version string,
	read func([]map[string]any) error) error {
	if objs := s[version]; len(objs) > 0 {
		return read(objs)
	}
	return nil
}

// SampleVersion is the version of a custom resource's apiVersion
// ("example.com/v1" -> "v1").
func SampleVersion(obj map[string]any) string {
	apiVersion, _ := obj["apiVersion"].(string)
	for i := len(apiVersion) - 1; i >= 0; i-- {
		if apiVersion[i] == '/' {
			return apiVersion[i+1:]
		}
	}
	return apiVersion
}
