package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Helpers of the `kapp tools crd-migrate-storage` tests (migrate_test.go).

// migrate runs `kapp tools crd-migrate-storage args...`.
func (e *env) migrate(t *testing.T, args ...string) result {
	t.Helper()
	return e.kapp(t, "", append([]string{"tools", "crd-migrate-storage"}, args...)...)
}

// createMany creates count custom resources bulk-0000... in namespace ns
// at version, 16 at a time, retrying while a just-established CRD's API is
// not served yet.
func (e *env) createMany(t *testing.T, n names, version, ns string, count int) {
	t.Helper()
	ri := e.dyn.Resource(n.gvr(version)).Namespace(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": group + "/" + version, "kind": n.Kind,
					"metadata": map[string]any{"name": fmt.Sprintf("bulk-%04d", i), "namespace": ns},
					"spec":     map[string]any{"color": "white", "size": int64(i)},
				}}
				err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
					_, err := ri.Create(ctx, u, metav1.CreateOptions{})
					if apierrors.IsNotFound(err) {
						return false, nil
					}
					return true, err
				})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("creating %s/%s: %w", ns, u.GetName(), err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < count; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	require.NoError(t, firstErr)
}

// objectVersions returns namespace/name -> resourceVersion of every custom
// resource (all namespaces), read at version.
func (e *env) objectVersions(t *testing.T, n names, version string) map[string]string {
	t.Helper()
	list, err := e.dyn.Resource(n.gvr(version)).List(tctx(t), metav1.ListOptions{})
	require.NoErrorf(t, err, "listing %s at %s", n.Plural, version)
	rvs := make(map[string]string, len(list.Items))
	for _, item := range list.Items {
		rvs[item.GetNamespace()+"/"+item.GetName()] = item.GetResourceVersion()
	}
	return rvs
}

// changedVersions counts the objects of before whose resourceVersion
// differs in after (every object of before must still exist).
func changedVersions(t *testing.T, before, after map[string]string) int {
	t.Helper()
	changed := 0
	for k, rv := range before {
		now, ok := after[k]
		require.Truef(t, ok, "custom resource %s is gone", k)
		if now != rv {
			changed++
		}
	}
	return changed
}

// storedVersions returns the live CRD's status.storedVersions.
func (e *env) storedVersions(t *testing.T, n names) []string {
	t.Helper()
	_, stored := e.crdVersions(t, n)
	return stored
}

// killedRun is a run of the binary under test stopped with SIGKILL.
type killedRun struct {
	out      string // stdout up to the kill
	lastLine string // the line that triggered the kill
}

// runAndKill starts kapp with args and kills it (SIGKILL: no chance to
// clean up) as soon as it prints a line for which kill returns true. The
// test fails if kapp ends on its own before that.
func (e *env) runAndKill(t *testing.T, kill func(line string) bool, args ...string) killedRun {
	t.Helper()
	full := append(append([]string{}, args...), "--kubeconfig", e.kubeconfig, "--color=false")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.kappBin, full...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())

	var out strings.Builder
	r := killedRun{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if kill(line) {
			require.NoError(t, cmd.Process.Kill())
			r.lastLine = line
			break
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	r.out = out.String()
	t.Logf("$ kapp %s  # killed after: %q\n%s%s", strings.Join(args, " "), r.lastLine, indent(r.out), indent(stderr.String()))
	require.NotEmptyf(t, r.lastLine, "kapp ended before it could be killed (%v)", werr)
	require.ErrorContains(t, werr, "signal: killed")
	return r
}
