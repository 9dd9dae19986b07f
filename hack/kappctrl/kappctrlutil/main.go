// Command kappctrlutil is the small helper of hack/kapp-controller.sh: it
// reads the cluster's kubeconfig, which a bash script cannot do reliably
// without kubectl.
//
//	kappctrlutil env KUBECONFIG
//	    print, as bash assignments, what kapp-controller needs to give Apps
//	    with spec.serviceAccountName access to the cluster from outside it:
//	    KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT (the apiserver of the
//	    kubeconfig) and KAPPCTRL_KUBERNETES_CA_DATA (its CA, PEM)
//
//	kappctrlutil namespace KUBECONFIG NAME
//	    create the namespace NAME unless it exists (the namespace a
//	    controller started with KAPPCTRL_NAMESPACE watches)
package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "env":
		err = printEnv(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "namespace":
		err = ensureNamespace(os.Args[2], os.Args[3])
	default:
		fmt.Fprintln(os.Stderr, "usage: kappctrlutil env KUBECONFIG | kappctrlutil namespace KUBECONFIG NAME")
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

// ensureNamespace creates the namespace unless it exists.
func ensureNamespace(kubeconfig, name string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		fmt.Printf("namespace %s created\n", name)
	case apierrors.IsAlreadyExists(err):
		fmt.Printf("namespace %s exists\n", name)
	default:
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
