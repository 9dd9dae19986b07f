package preflight

import (
	"fmt"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
)

// KubeClientFromDeps builds the client-go adapter (pkg/kapp/kube) over
// kapp's clients: its dynamic client and its clientset, configured by
// kapp's flags (--kubeconfig, --kubeconfig-context, ...). The preflight
// hook and the tools commands share it.
func KubeClientFromDeps(depsFactory cmdcore.DepsFactory) (*kube.Client, error) {
	dyn, err := depsFactory.DynamicClient(cmdcore.DynamicClientOpts{})
	if err != nil {
		return nil, fmt.Errorf("building dynamic client: %w", err)
	}
	core, err := depsFactory.CoreClient()
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	return kube.New(dyn, core), nil
}

// ClusterFromDeps returns a factory of the evaluation service's Cluster
// over kapp's clients (KubeClientFromDeps), called only when a run needs
// the cluster.
func ClusterFromDeps(depsFactory cmdcore.DepsFactory) func() (evaluation.Cluster, error) {
	return func() (evaluation.Cluster, error) {
		c, err := KubeClientFromDeps(depsFactory)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}
