// Command fluxapply applies the objects of a YAML file to the cluster of
// KUBECONFIG with Flux's apply library, github.com/fluxcd/pkg/ssa: the
// ResourceManager.ApplyAll that kustomize-controller runs on every
// reconciliation (a server-side dry run per object, then a server-side
// apply with forced ownership of the objects that drifted). It prints the
// change set, one line per object (e.g. "Thing/default/name configured"), and
// exits 1 with the error when the apply fails.
//
// Usage: fluxapply [--field-manager NAME] [--migrate-api-version] -f FILE
//
// For the end-to-end tests of test/e2e (hack/ssaclients.sh builds it).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "fluxapply: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("fluxapply", flag.ContinueOnError)
	file := fs.String("f", "", "the YAML file of the objects to apply (required)")
	manager := fs.String("field-manager", "kustomize-controller", "the field manager of the apply (kustomize-controller's)")
	group := fs.String("owner-group", "kustomize.toolkit.fluxcd.io", "the owner label prefix (kustomize-controller's)")
	migrate := fs.Bool("migrate-api-version", false,
		"rewrite every managedFields entry of an existing object to the applied version first "+
			"(ApplyOptions.MigrateAPIVersion; off in kustomize-controller unless its feature gate is on)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || fs.NArg() != 0 {
		return errors.New("usage: fluxapply [--field-manager NAME] [--migrate-api-version] -f FILE")
	}

	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	objects, err := ssautils.ReadObjects(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("reading %s: %w", *file, err)
	}
	if len(objects) == 0 {
		return fmt.Errorf("%s holds no object", *file)
	}

	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	// A new process per apply: its REST mapper discovers the CRD as it is now.
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	// ApplyAll does not wait for readiness: no status poller.
	rm := ssa.NewResourceManager(c, nil, ssa.Owner{Field: *manager, Group: *group})

	opts := ssa.DefaultApplyOptions()
	opts.MigrateAPIVersion = *migrate
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cs, err := rm.ApplyAll(ctx, objects, opts)
	if err != nil {
		return err
	}
	for _, e := range cs.Entries {
		fmt.Fprintln(out, e.String())
	}
	return nil
}
