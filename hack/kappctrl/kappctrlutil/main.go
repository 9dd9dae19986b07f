// Command kappctrlutil is the small helper of hack/kapp-controller.sh: it
// reads the cluster's kubeconfig, which a bash script cannot do reliably
// without kubectl.
//
//	kappctrlutil env KUBECONFIG
//	    print, as bash assignments, what kapp-controller needs to give Apps
//	    with spec.serviceAccountName access to the cluster from outside it:
//	    KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT (the apiserver of the
//	    kubeconfig) and KAPPCTRL_KUBERNETES_CA_DATA (its CA, PEM)
package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "env":
		err = printEnv(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "usage: kappctrlutil env KUBECONFIG")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kappctrlutil %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func printEnv(kubeconfig string) error {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return fmt.Errorf("%s: no current context", kubeconfig)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return fmt.Errorf("%s: context %q names no cluster", kubeconfig, cfg.CurrentContext)
	}
	u, err := url.Parse(cluster.Server)
	if err != nil {
		return fmt.Errorf("%s: server: %w", kubeconfig, err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return fmt.Errorf("%s: server %q: %w", kubeconfig, cluster.Server, err)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return fmt.Errorf("%s: cluster %q has no certificate-authority-data", kubeconfig, ctx.Cluster)
	}
	for _, kv := range [][2]string{
		{"KUBERNETES_SERVICE_HOST", host},
		{"KUBERNETES_SERVICE_PORT", port},
		{"KAPPCTRL_KUBERNETES_CA_DATA", string(cluster.CertificateAuthorityData)},
	} {
		fmt.Printf("%s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return nil
}

// shellQuote quotes s for bash: single quotes, with ' as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
