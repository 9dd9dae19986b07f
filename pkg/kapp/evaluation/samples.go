package evaluation

import (
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
)

// readSamples reads the sample custom resources of an updated CRD (Pair.Samples)
// as stored objects, at the versions whose schema changed, and returns
// what they showed (none when the pair is a create, has no samples or
// existingResources is disabled).
func readSamples(p Pair, pairFindings []finding.Finding, cfg *config.Settings) ([]finding.VersionImpact, error) {
	if p.Old == nil || len(p.Samples) == 0 || !cfg.Checks.CRD.ExistingResources.Enabled {
		return nil, nil
	}
	byVersion := map[string][]map[string]any{}
	for _, obj := range p.Samples {
		v := SampleVersion(obj)
		byVersion[v] = append(byVersion[v], obj)
	}
	var impacts []finding.VersionImpact
	for _, version := range objects.VersionsToRead(p.Old, p.New) {
		// Read as the target version's apiserver validates (--kube-version).
		reader, err := objects.NewObjectReader(checks.ValidatedAt(p.Old, cfg.KubeVersion),
			checks.ValidatedAt(p.New, cfg.KubeVersion), version, finding.SourceSamples, pairFindings, cfg)
		if err != nil {
			return nil, fmt.Errorf("reading sample objects of CRD %s: %w", p.New.Name, err)
		}
		reader.Read(byVersion[version])
		impacts = append(impacts, reader.Result())
	}
	return impacts, nil
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
