package preflight

import (
	"testing"

	ctlcap "carvel.dev/kapp/pkg/kapp/clusterapply"
	ctlconf "carvel.dev/kapp/pkg/kapp/config"
	ctldiff "carvel.dev/kapp/pkg/kapp/diff"
	ctldgraph "carvel.dev/kapp/pkg/kapp/diffgraph"
	"carvel.dev/kapp/pkg/kapp/logger"
	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/stretchr/testify/require"
)

// deployGraph is the change graph `kapp deploy` hands to the preflight
// checks for existing -> new resources, computed by kapp's own code as its
// deploy command does (cmd/app/deploy.go calculateAndPresentChanges): the
// default kapp config with the kapp Configs among new (their rebase rules,
// change groups and change rules), the diff's change set, and kapp's
// cluster changes with the given --apply-default-update-strategy. Only the
// apiserver is missing: nothing here reads or writes a cluster.
func deployGraph(t *testing.T, defaultUpdateStrategy string, existing, new []ctlres.Resource) *ctldgraph.ChangeGraph {
	t.Helper()
	new, conf, err := ctlconf.NewConfFromResourcesWithDefaults(new)
	require.NoError(t, err)
	changeFactory := ctldiff.NewChangeFactory(conf.RebaseMods(), conf.DiffAgainstLastAppliedFieldExclusionMods(),
		conf.DiffAgainstExistingFieldExclusionMods(), ctldiff.ChangeOpts{})
	changeSetFactory := ctldiff.NewChangeSetFactory(ctldiff.ChangeSetOpts{}, changeFactory)
	changes, err := ctldiff.NewChangeSetWithVersionedRs(existing, new, conf.TemplateRules(),
		ctldiff.ChangeSetOpts{}, changeFactory).Calculate()
	require.NoError(t, err)

	opts := ctlcap.ClusterChangeOpts{
		AddOrUpdateChangeOpts: ctlcap.AddOrUpdateChangeOpts{DefaultUpdateStrategy: defaultUpdateStrategy},
	}
	clusterChangeFactory := ctlcap.NewClusterChangeFactory(opts, ctlres.IdentifiedResources{}, changeFactory,
		changeSetFactory, ctlcap.NewConvergedResourceFactory(conf.WaitRules(), ctlcap.ConvergedResourceFactoryOpts{}),
		nil, conf.DiffMaskRules())
	_, graph, err := ctlcap.NewClusterChangeSet(changes, ctlcap.ClusterChangeSetOpts{}, clusterChangeFactory,
		conf.ChangeGroupBindings(), conf.ChangeRuleBindings(), nil, logger.NewNoopLogger()).Calculate()
	require.NoError(t, err)
	return graph
}

// live turns a manifest into the object the apiserver holds: with a uid, a
// resourceVersion and, for a CRD, an Established condition and its storage
// version in status.storedVersions.
func live(t *testing.T, yaml string) ctlres.Resource {
	t.Helper()
	r := res(t, yaml)
	obj := r.UnstructuredObject()
	meta := obj["metadata"].(map[string]any)
	meta["uid"] = "uid-" + r.Name()
	meta["resourceVersion"] = "42"
	if IsCRD(r) {
		obj["status"] = map[string]any{
			"storedVersions": []any{"v1"},
			"conditions": []any{
				map[string]any{"type": "Established", "status": "True"},
				map[string]any{"type": "NamesAccepted", "status": "True"},
			},
		}
	}
	return r
}

// widgetCR is a Widget custom resource manifest.
func widgetCR(name string) string {
	return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: " + name + ", namespace: default}\nspec: {size: 2}\n"
}
