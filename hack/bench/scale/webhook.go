package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/webhook"
	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
)

// webhookBench is the admission webhook's load benchmark
// (hack/bench-webhook.sh): the webhook's server (pkg/kapp/webhook, the
// code `kapp tools crd-upgrade-safety-webhook` runs) serves over real TLS
// on loopback, and reviews of one CRD update (a real CRD with a safe
// change) are posted to it as the apiserver posts them, 1, 10 and 50 at a
// time. It prints per concurrency the reviews sent, p50, p99 and the
// slowest review latency, and the throughput.
//
// Without -kubeconfig the webhook's cluster holds no custom resources (an
// in-memory Cluster answering "none"): the cost of decoding and comparing.
// With -kubeconfig and -objects N, the CRD is created on that cluster
// with N minimal valid custom resources, and every review lists and
// validates all of them (existingResources), as in production.
func webhookBench(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ExitOnError)
	src := fs.String("crd", ".cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml", "real CRD file")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of a cluster for the custom resources (none: no custom resources)")
	objects := fs.Int("objects", 10000, "custom resources to create (with -kubeconfig)")
	levels := fs.String("concurrency", "1,10,50", "reviews in flight, one run each")
	duration := fs.Duration("duration", 10*time.Second, "length of each run (at least 2 reviews per worker are sent)")
	timeout := fs.Duration("timeout", 10*time.Second, "the admission timeout the apiserver gives each review (?timeout=)")
	logFile := fs.String("log", "", "file for the webhook's log (one line per review)")
	cpuProfile := fs.String("cpuprofile", "", "file for a CPU profile of the runs (go tool pprof)")
	pidsFlag := fs.String("cluster-pids", "", "comma-separated ids of the cluster's processes (apiserver, etcd), to print their CPU per review")
	_ = fs.Parse(args)
	clusterPIDs, err := parsePIDs(*pidsFlag)
	if err != nil {
		return fmt.Errorf("-cluster-pids: %w", err)
	}
	var concurrency []int
	for _, c := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return fmt.Errorf("-concurrency: %q", c)
		}
		concurrency = append(concurrency, n)
	}

	obj, err := readObject(*src)
	if err != nil {
		return err
	}
	rename(obj, "webhook.bench.example.com")
	oldYAML, oldCRD, err := marshalCRD(obj)
	if err != nil {
		return err
	}
	changed, _ := readObjectBytes(oldYAML)
	safeChangeCRD(changed, true)
	_, newCRD, err := marshalCRD(changed)
	if err != nil {
		return err
	}

	ctx := context.Background()
	var cluster evaluation.Cluster = noObjects{}
	what := "no custom resources"
	if *kubeconfig != "" {
		cl, err := newCluster(*kubeconfig)
		if err != nil {
			return err
		}
		if oldCRD, err = prepareObjects(ctx, cl, oldCRD, *objects); err != nil {
			return err
		}
		// The webhook's cluster, as preflight.ClusterFromDeps builds it.
		cluster = kube.New(cl.dyn, cl.core)
		what = fmt.Sprintf("%d custom resources on the cluster", *objects)
	} else {
		setStoredVersions(oldCRD)
	}
	newCRD.Status = oldCRD.Status
	newCRD.ResourceVersion, newCRD.UID = oldCRD.ResourceVersion, oldCRD.UID
	req, err := webhooktest.Request(admissionv1.Update, newCRD, oldCRD)
	if err != nil {
		return err
	}
	body, err := webhooktest.Review(req)
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "bench-webhook")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cert, err := webhooktest.WriteCert(dir)
	if err != nil {
		return err
	}
	cfg := webhook.WebhookSettings(config.Default())
	inflight := max(4, 2*goruntime.GOMAXPROCS(0)) // the command's default
	reviewer := &webhook.Reviewer{Settings: &cfg, Cluster: cluster}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return err
		}
		defer f.Close()
		reviewer.Logf = log.New(f, "", log.Lmicroseconds).Printf
	}
	srv := &webhook.Server{BindAddress: "127.0.0.1", Certs: &webhook.CertReloader{CertFile: cert.CertFile, KeyFile: cert.KeyFile},
		Handler: webhook.NewHandler(reviewer, inflight)}
	listening := make(chan net.Addr, 1)
	srv.Listening = func(a net.Addr) { listening <- a }
	srvCtx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Run(srvCtx) }()
	var addr net.Addr
	select {
	case addr = <-listening:
	case err := <-served:
		return err
	}
	url := "https://" + addr.String() + webhook.ValidatePath + "?timeout=" + timeout.String()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.PEM)
	// As the apiserver calls a webhook behind a Service: HTTP/1.1, a
	// connection per review in flight, kept alive.
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}, MaxIdleConnsPerHost: 100}}

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("webhook: %s update (%.0f KB per CRD, review body %.0f KB), a safe change; %s; GOMAXPROCS %d, %d reviews evaluated at once; load %s\n",
		oldCRD.Name, float64(len(oldYAML))/1024, float64(len(body))/1024, what, goruntime.GOMAXPROCS(0), inflight,
		strings.Join(strings.Fields(string(load))[:3], " "))
	if _, err := review(client, url, body); err != nil { // warm-up, and the answer is checked once
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cpuHeader := ""
	if len(clusterPIDs) > 0 {
		cpuHeader = fmt.Sprintf(" %16s", "cluster CPU/rev.")
	}
	// CPU per review: this process (the webhook, and the client's TLS), and
	// the cluster's processes: figures that do not depend on what else
	// the machine runs.
	fmt.Printf("%12s %8s %10s %10s %10s %10s %15s%s\n", "concurrency", "reviews", "p50", "p99", "slowest", "reviews/s", "webhook CPU/rev.", cpuHeader)
	var summary []string
	for _, c := range concurrency {
		cpu0, cluster0 := selfCPU(), cpuTime(clusterPIDs)
		lat, late, wall, err := runLoad(client, url, body, c, *duration)
		if err != nil {
			return err
		}
		cpu, clusterCPU := selfCPU()-cpu0, cpuTime(clusterPIDs)-cluster0
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50, p99 := percentile(lat, 0.50), percentile(lat, 0.99)
		perReview := func(d time.Duration) string { return round(d / time.Duration(len(lat))) }
		clusterCol := ""
		if len(clusterPIDs) > 0 {
			clusterCol = fmt.Sprintf(" %16s", perReview(clusterCPU))
		}
		lateCol := ""
		if late > 0 {
			lateCol = fmt.Sprintf("  %d not finished within the deadline (denied under failMode closed)", late)
		}
		fmt.Printf("%12d %8d %10s %10s %10s %10.1f %15s%s%s\n", c, len(lat), round(p50), round(p99), round(lat[len(lat)-1]),
			float64(len(lat))/wall.Seconds(), perReview(cpu), clusterCol, lateCol)
		if c == 10 {
			target := "1s"
			if *kubeconfig != "" {
				target = "10s (the default admission timeout)"
			}
			line := fmt.Sprintf("p99 at 10 concurrent reviews with %s: %s (target < %s)", what, round(p99), target)
			if late > 0 {
				line += fmt.Sprintf("; %d of %d reviews not finished within the deadline: target missed", late, len(lat))
			}
			summary = append(summary, line)
		}
	}
	for _, s := range summary {
		fmt.Println(s)
	}
	stop()
	return <-served
}

// runLoad sends reviews from c workers for about d (at least 2 each) and
// returns every review's latency, how many the webhook could not finish
// within the deadline (failMode closed denies them), and the run's wall
// time.
func runLoad(client *http.Client, url string, body []byte, c int, d time.Duration) ([]time.Duration, int, time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var late int
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2 || time.Since(start) < d; i++ {
				took, err := review(client, url, body)
				mu.Lock()
				switch {
				case errors.Is(err, errTooLate):
					late++
				case err != nil && firstErr == nil:
					firstErr = err
				}
				lat = append(lat, took)
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	return lat, late, time.Since(start), firstErr
}

// errTooLate is a review the webhook denied because it could not finish it
// within the deadline.
var errTooLate = errors.New("denied: not finished in time")

// review posts one review and checks that it was allowed (a safe change).
func review(client *http.Client, url string, body []byte) (time.Duration, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, data)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, err
	}
	if out.Response == nil || !out.Response.Allowed {
		msg := ""
		if out.Response != nil && out.Response.Result != nil {
			msg = out.Response.Result.Message
		}
		if strings.Contains(msg, "did not finish in time") {
			return took, errTooLate
		}
		return 0, fmt.Errorf("the safe change was denied: %s", msg)
	}
	return took, nil
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

// setStoredVersions gives a CRD read from a file the status the apiserver
// keeps: its storage version stored.
func setStoredVersions(crd *apiextv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
		}
	}
}

// prepareObjects creates the CRD on the cluster with n minimal custom
// resources (those already there are kept) and returns the live CRD.
func prepareObjects(ctx context.Context, cl *cluster, crd *apiextv1.CustomResourceDefinition, n int) (*apiextv1.CustomResourceDefinition, error) {
	crs, err := customResourcesOf(crd)
	if err != nil {
		return nil, err
	}
	if err := cl.applyCRD(ctx, crd); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cl.createCustomResources(ctx, crs, 0, n, 32); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "webhook: %d custom resources of %s in place (%.0fs)\n", n, crd.Name, time.Since(start).Seconds())
	live, err := cl.dyn.Resource(crdGVR).Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, out); err != nil {
		return nil, err
	}
	return out, nil
}

// noObjects is a cluster without custom resources.
type noObjects struct{}

func (noObjects) GetCRDs(context.Context, []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	return map[string]*apiextv1.CustomResourceDefinition{}, nil
}

func (noObjects) ListCustomResources(context.Context, *apiextv1.CustomResourceDefinition, string, func([]map[string]any) error) error {
	return nil
}

func (noObjects) CountCustomResources(context.Context, *apiextv1.CustomResourceDefinition) (int, error) {
	return 0, nil
}

func (noObjects) ServerVersion(context.Context) (*version.Info, error) {
	return &version.Info{Major: "1", Minor: "37"}, nil
}

func (noObjects) DryRun(context.Context, evaluation.Verb, *unstructured.Unstructured) ([]string, error) {
	return nil, errors.New("the webhook never sends a dry run")
}
