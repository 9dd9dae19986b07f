package main

import (
	"bufio"
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
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	"k8s.io/client-go/rest"
)

// webhookBench is the admission webhook's load benchmark
// (hack/bench-webhook.sh): the webhook's server (pkg/kapp/webhook, the
// code `kapp tools crd-upgrade-safety-webhook` runs) serves over real TLS
// on loopback in its own process (`scale webhook-serve`, of this binary or
// of -server: the same tool built against another commit, BASELINE=), and
// reviews of CRD updates (real CRDs, each with a safe change) are posted to
// it as the apiserver posts them. It prints the reviews sent, p50, p99 and
// the slowest review latency, the throughput, and the CPU (user+sys) of the
// server process per review (and of the cluster's, with -cluster-pids).
//
// Two loads:
//   - one CRD (-crd), 1, 10 and 50 reviews at a time (-concurrency), each
//     worker posting its next review as soon as the last is answered;
//   - a burst (-burst N): the N largest real CRDs of -crds (distinct
//     names) each updated at once, N reviews in flight, one per CRD, in
//     rounds for -duration: an operator upgrade.
//
// Without -kubeconfig the webhook's cluster holds no custom resources (an
// in-memory Cluster answering "none"): the cost of decoding and comparing.
// With -kubeconfig and -objects N, each CRD is created on that cluster
// with N minimal valid custom resources, and every review lists and
// validates all of them (existingResources), as in production.
//
// -cold gives every review an old CRD of its own (its resourceVersion), as
// when each review follows another update of the CRD: no review finds the
// old CRD of another in the webhook's caches, and no two reviews are alike.
func webhookBench(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ExitOnError)
	src := fs.String("crd", ".cache/crds/prometheus-operator/monitoring.coreos.com_prometheuses.yaml", "real CRD file")
	burst := fs.Int("burst", 0, "post a burst of reviews of the N largest CRDs of -crds at once instead (0: one CRD, -crd)")
	crdsDir := fs.String("crds", ".cache/crds", "folder of real CRDs for -burst")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of a cluster for the custom resources (none: no custom resources)")
	objects := fs.Int("objects", 10000, "custom resources to create per CRD (with -kubeconfig)")
	levels := fs.String("concurrency", "1,10,50", "reviews in flight, one run each (one CRD)")
	duration := fs.Duration("duration", 10*time.Second, "length of each run (at least 2 reviews per worker, 3 rounds of a burst)")
	timeout := fs.Duration("timeout", 10*time.Second, "the admission timeout the apiserver gives each review (?timeout=)")
	cold := fs.Bool("cold", false, "give every review an old CRD of its own (nothing shared with another review)")
	logFile := fs.String("log", "", "file for the webhook's log (one line per review)")
	cpuProfile := fs.String("cpuprofile", "", "file for a CPU profile of the server process (go tool pprof)")
	pidsFlag := fs.String("cluster-pids", "", "comma-separated ids of the cluster's processes (apiserver, etcd), to print their CPU per review")
	server := fs.String("server", "", "the scale binary whose `webhook-serve` serves (default: this one)")
	label := fs.String("label", "", "what the server is, in the summary lines")
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
	files := []string{*src}
	if *burst > 0 {
		if files, err = largestCRDs(*crdsDir); err != nil {
			return err
		}
		concurrency = []int{*burst}
	}

	ctx := context.Background()
	var cl *cluster
	if *kubeconfig != "" {
		if cl, err = newCluster(*kubeconfig); err != nil {
			return err
		}
	}
	var pairs []benchPair
	var crdBytes int
	group := "webhook.bench.example.com"
	if *burst > 0 {
		group = "burst.webhook.bench.example.com" // other CRDs, with their own objects
	}
	for _, f := range files {
		p, size, err := preparePair(ctx, f, group, cl, *objects)
		switch {
		case errors.Is(err, errNoObject) && *burst > 0:
			// The benchmark cannot make an object of it: the next largest.
			fmt.Fprintf(os.Stderr, "webhook: %v: not in the burst\n", err)
			continue
		case err != nil:
			return err
		}
		pairs = append(pairs, p)
		crdBytes += size
		if *burst > 0 && len(pairs) == *burst {
			break
		}
	}
	if *burst > 0 && len(pairs) < *burst {
		return fmt.Errorf("%s: %d CRDs for the burst, not %d (run hack/fetch-crds.sh)", *crdsDir, len(pairs), *burst)
	}
	what := "no custom resources"
	if cl != nil {
		what = fmt.Sprintf("%d custom resources per CRD on the cluster", *objects)
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
	srv, err := startServer(*server, cert, *kubeconfig, *logFile, *cpuProfile)
	if err != nil {
		return err
	}
	defer srv.stop()
	url := "https://" + srv.addr + webhook.ValidatePath + "?timeout=" + timeout.String()

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert.PEM)
	// As the apiserver calls a webhook behind a Service: HTTP/1.1, a
	// connection per review in flight, kept alive.
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}, MaxIdleConnsPerHost: 100}}

	var seq atomic.Int64
	next := func(p *benchPair) ([]byte, error) {
		if !*cold {
			return p.body, nil
		}
		return p.review(fmt.Sprintf("%d", 1000000+seq.Add(1)))
	}
	load, _ := os.ReadFile("/proc/loadavg")
	subject := fmt.Sprintf("%s update (%.0f KB per CRD)", pairs[0].name, float64(crdBytes)/1024)
	if *burst > 0 {
		names := make([]string, len(pairs))
		for i, p := range pairs {
			names[i] = p.name
		}
		subject = fmt.Sprintf("burst of %d CRD updates at once (%.0f KB of CRDs: %s)", len(pairs), float64(crdBytes)/1024, strings.Join(names, ", "))
	}
	coldText := ""
	if *cold {
		coldText = "; every review with an old CRD of its own (-cold)"
	}
	fmt.Printf("webhook%s: %s, a safe change; %s%s; GOMAXPROCS %d; load %s\n", labelText(*label), subject, what, coldText,
		goruntime.GOMAXPROCS(0), strings.Join(strings.Fields(string(load))[:3], " "))
	for i := range pairs { // warm-up, and each answer is checked once
		body, err := next(&pairs[i])
		if err != nil {
			return err
		}
		if _, err := review(client, url, body); err != nil {
			return fmt.Errorf("%s: %w", pairs[i].name, err)
		}
	}
	cpuHeader := ""
	if len(clusterPIDs) > 0 {
		cpuHeader = fmt.Sprintf(" %16s", "cluster CPU/rev.")
	}
	// CPU per review: the server process, and the cluster's processes:
	// figures that do not depend on what else the machine runs.
	fmt.Printf("%12s %8s %10s %10s %10s %10s %16s%s\n", "concurrency", "reviews", "p50", "p99", "slowest", "reviews/s", "webhook CPU/rev.", cpuHeader)
	var summary []string
	for _, c := range concurrency {
		cpu0, cluster0 := cpuTime([]int{srv.pid}), cpuTime(clusterPIDs)
		var lat []time.Duration
		var late int
		var wall time.Duration
		if *burst > 0 {
			lat, late, wall, err = runBurst(client, url, pairs, next, *duration)
		} else {
			lat, late, wall, err = runLoad(client, url, func() ([]byte, error) { return next(&pairs[0]) }, c, *duration)
		}
		if err != nil {
			return err
		}
		cpu, clusterCPU := cpuTime([]int{srv.pid})-cpu0, cpuTime(clusterPIDs)-cluster0
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
		fmt.Printf("%12d %8d %10s %10s %10s %10.1f %16s%s%s\n", c, len(lat), round(p50), round(p99), round(lat[len(lat)-1]),
			float64(len(lat))/wall.Seconds(), perReview(cpu), clusterCol, lateCol)
		if c == 10 {
			line := fmt.Sprintf("p99%s at 10 concurrent reviews%s with %s%s: %s (p50 %s, %s CPU per review)",
				labelText(*label), map[bool]string{true: " (a burst of 10 CRDs)"}[*burst > 0], what, coldText, round(p99), round(p50), perReview(cpu))
			if late > 0 {
				line += fmt.Sprintf("; %d of %d reviews not finished within the deadline", late, len(lat))
			}
			summary = append(summary, line)
		}
	}
	for _, s := range summary {
		fmt.Println(s)
	}
	return srv.stop()
}

func labelText(label string) string {
	if label == "" {
		return ""
	}
	return " (" + label + ")"
}

// benchPair is one CRD update of the benchmark: its review, and how to
// make another with the old CRD at another resourceVersion (-cold).
type benchPair struct {
	name           string
	oldCRD, newCRD *apiextv1.CustomResourceDefinition
	body           []byte
}

// review is the pair's review with the old CRD at resourceVersion rv
// ("": as it is).
func (p *benchPair) review(rv string) ([]byte, error) {
	oldCRD := p.oldCRD
	if rv != "" {
		c := *oldCRD
		c.ResourceVersion = rv
		oldCRD = &c
	}
	req, err := webhooktest.Request(admissionv1.Update, p.newCRD, oldCRD)
	if err != nil {
		return nil, err
	}
	return webhooktest.Review(req)
}

// preparePair reads a real CRD, renames it into group,
// creates it with n custom resources when cl is set, and returns its
// update with a safe change, and the size of the CRD file.
func preparePair(ctx context.Context, file, group string, cl *cluster, n int) (benchPair, int, error) {
	obj, err := readObject(file)
	if err != nil {
		return benchPair{}, 0, err
	}
	rename(obj, group)
	oldYAML, oldCRD, err := marshalCRD(obj)
	if err != nil {
		return benchPair{}, 0, err
	}
	changed, _ := readObjectBytes(oldYAML)
	safeChangeCRD(changed, true)
	_, newCRD, err := marshalCRD(changed)
	if err != nil {
		return benchPair{}, 0, err
	}
	if cl != nil {
		if _, err := customResourcesOf(oldCRD); err != nil {
			return benchPair{}, 0, fmt.Errorf("%w: %w", errNoObject, err)
		}
		if oldCRD, err = prepareObjects(ctx, cl, oldCRD, n); err != nil {
			return benchPair{}, 0, err
		}
	} else {
		setStoredVersions(oldCRD)
	}
	newCRD.Status = oldCRD.Status
	newCRD.ResourceVersion, newCRD.UID = oldCRD.ResourceVersion, oldCRD.UID
	p := benchPair{name: oldCRD.Name, oldCRD: oldCRD, newCRD: newCRD}
	if p.body, err = p.review(""); err != nil {
		return benchPair{}, 0, err
	}
	return p, len(oldYAML), nil
}

// errNoObject: the benchmark cannot make a valid custom resource of a CRD.
var errNoObject = errors.New("no custom resource")

// largestCRDs returns the CRD files under dir, one per CRD (resource) name,
// largest first.
func largestCRDs(dir string) ([]string, error) {
	type file struct {
		path string
		size int64
	}
	var files []file
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, file{path, info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool {
		return files[i].size > files[j].size || files[i].size == files[j].size && files[i].path < files[j].path
	})
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		obj, err := readObject(f.path)
		if err != nil || obj["kind"] != "CustomResourceDefinition" {
			continue
		}
		plural, _ := dig(obj, "spec", "names", "plural").(string)
		if plural == "" || seen[plural] {
			continue // the same CRD in another release, or a name the benchmark's group already has
		}
		seen[plural] = true
		out = append(out, f.path)
	}
	return out, nil
}

// runBurst posts the review of every pair at once, in rounds, for about d
// (at least 3 rounds), and returns every review's latency as runLoad does.
func runBurst(client *http.Client, url string, pairs []benchPair, next func(*benchPair) ([]byte, error),
	d time.Duration) ([]time.Duration, int, time.Duration, error) {

	var lat []time.Duration
	late := 0
	var wall time.Duration
	for round := 0; round < 3 || wall < d; round++ {
		bodies := make([][]byte, len(pairs))
		for i := range pairs {
			b, err := next(&pairs[i])
			if err != nil {
				return nil, 0, 0, err
			}
			bodies[i] = b
		}
		start := time.Now()
		took := make([]time.Duration, len(pairs))
		errs := make([]error, len(pairs))
		var wg sync.WaitGroup
		for i := range pairs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				took[i], errs[i] = review(client, url, bodies[i])
			}()
		}
		wg.Wait()
		wall += time.Since(start)
		for i, err := range errs {
			switch {
			case errors.Is(err, errTooLate):
				late++
			case err != nil:
				return nil, 0, 0, fmt.Errorf("%s: %w", pairs[i].name, err)
			}
		}
		lat = append(lat, took...)
	}
	return lat, late, wall, nil
}

// benchServer is the webhook's server process (`scale webhook-serve`).
type benchServer struct {
	cmd   *exec.Cmd
	pid   int
	addr  string
	stdin io.WriteCloser
	done  chan error
}

// startServer starts `BIN webhook-serve` (BIN: bin, or this binary) and
// waits until it listens.
func startServer(bin string, cert webhooktest.Cert, kubeconfig, logFile, cpuProfile string) (*benchServer, error) {
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = self
	}
	cmd := exec.Command(bin, "webhook-serve", "-cert", cert.CertFile, "-key", cert.KeyFile,
		"-kubeconfig", kubeconfig, "-log", logFile, "-cpuprofile", cpuProfile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &benchServer{cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, done: make(chan error, 1)}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s webhook-serve did not start: %q %v", bin, line, err)
	}
	s.addr = strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	go func() { s.done <- cmd.Wait() }()
	return s, nil
}

// stop ends the server (closing its stdin) and waits for it.
func (s *benchServer) stop() error {
	if s.stdin == nil {
		return nil
	}
	_ = s.stdin.Close()
	s.stdin = nil
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		return errors.New("the webhook's server did not stop")
	}
}

// webhookServe is the server of the benchmark: the webhook's server (as
// `kapp tools crd-upgrade-safety-webhook` builds it) on a free loopback
// port, which it prints ("listening ADDR"), until its stdin closes.
func webhookServe(args []string) error {
	fs := flag.NewFlagSet("webhook-serve", flag.ExitOnError)
	certFile := fs.String("cert", "", "serving certificate")
	keyFile := fs.String("key", "", "its key")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster (none: a cluster without custom resources)")
	logFile := fs.String("log", "", "file for the webhook's log (one line per review)")
	cpuProfile := fs.String("cpuprofile", "", "file for a CPU profile")
	_ = fs.Parse(args)
	var cluster evaluation.Cluster = noObjects{}
	if *kubeconfig != "" {
		// Quiet: the burst reads CRDs at deprecated versions.
		rest.SetDefaultWarningHandler(rest.NoWarnings{})
		cl, err := newCluster(*kubeconfig)
		if err != nil {
			return err
		}
		// The webhook's cluster, as preflight.ClusterFromDeps builds it.
		cluster = kube.New(cl.dyn, cl.core)
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
	srv := &webhook.Server{BindAddress: "127.0.0.1", Certs: &webhook.CertReloader{CertFile: *certFile, KeyFile: *keyFile},
		Handler: webhook.NewHandler(reviewer, inflight)}
	listening := make(chan net.Addr, 1)
	srv.Listening = func(a net.Addr) { listening <- a }
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	select {
	case a := <-listening:
		fmt.Printf("listening %s\n", a)
	case err := <-served:
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
	stop()
	return <-served
}

// runLoad sends reviews (next) from c workers for about d (at least 2 each) and
// returns every review's latency, how many the webhook could not finish
// within the deadline (failMode closed denies them), and the run's wall
// time.
func runLoad(client *http.Client, url string, next func() ([]byte, error), c int, d time.Duration) ([]time.Duration, int, time.Duration, error) {
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
				body, err := next()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
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
type noObjects struct{ evaluation.Unsupported }

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
