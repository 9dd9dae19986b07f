package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/webhook/webhooktest"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// soak is the webhook's soak test (hack/soak-webhook.sh, issue 32 item 6):
// two servers of the built binary (`kapp tools crd-upgrade-safety-webhook`,
// one under failMode closed, one under open) judge, for -duration, a steady
// -rate of mixed reviews posted as the apiserver posts them (safe and
// unsafe updates and a delete of a CRD with stored custom resources on a
// real cluster, and malformed reviews), each over a new TLS connection.
// A third of the way through, the serving certificate is renewed (a new
// leaf of the same CA, written over the files the servers read); two thirds
// of the way, the cluster's kube-apiserver is killed, kept down for -down,
// and started again (hack/cluster.sh stop-apiserver, start-apiserver).
//
// Every -interval it prints each server's RSS and goroutines; at the end,
// the reviews sent and answered, those not answered within their deadline
// (the ?timeout= of the review), the verdicts against what each phase
// expects (apiserver up: the findings; down: failMode closed denies, open
// allows with a warning; the moments of the kill and of the start accept
// either), and the TLS handshake failures. It fails when any review was
// not answered in time, a verdict was wrong, or a handshake failed.
func soak(args []string) error {
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	kappBin := fs.String("kapp", "bin/kapp", "the kapp binary whose webhook is soaked")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster (hack/cluster.sh's)")
	clusterScript := fs.String("cluster-script", "hack/cluster.sh", "the script that stops and starts the cluster's apiserver (stop-apiserver, start-apiserver; CLUSTER_STATE_DIR from the environment)")
	duration := fs.Duration("duration", 30*time.Minute, "length of the run")
	rate := fs.Float64("rate", 10, "reviews per second, in all, spread evenly over the kinds and both servers")
	timeout := fs.Duration("timeout", 10*time.Second, "the admission timeout of each review (?timeout=): its deadline")
	objects := fs.Int("objects", 200, "custom resources of the CRD on the cluster")
	down := fs.Duration("down", 20*time.Second, "how long the apiserver stays down")
	interval := fs.Duration("interval", time.Minute, "how often RSS and goroutines are printed")
	crdFile := fs.String("crd", "examples/crd-upgrade/crd-v1.yaml", "the CRD on the cluster (old side)")
	safeFile := fs.String("safe", "examples/crd-upgrade/crd-v2-safe.yaml", "a safe update of it")
	unsafeFile := fs.String("unsafe", "examples/crd-upgrade/crd-v3-unsafe.yaml", "an unsafe update of it")
	_ = fs.Parse(args)
	if *kubeconfig == "" {
		return errors.New("-kubeconfig: the cluster is needed (hack/soak-webhook.sh starts one)")
	}
	if *rate <= 0 || *duration <= 0 {
		return errors.New("-rate and -duration must be positive")
	}

	ctx := context.Background()
	cl, err := newCluster(*kubeconfig)
	if err != nil {
		return err
	}
	read := func(path string) (*apiextv1.CustomResourceDefinition, error) {
		obj, err := readObject(path)
		if err != nil {
			return nil, err
		}
		_, crd, err := marshalCRD(obj)
		return crd, err
	}
	oldCRD, err := read(*crdFile)
	if err != nil {
		return err
	}
	if oldCRD, err = prepareObjects(ctx, cl, oldCRD, *objects); err != nil {
		return err
	}
	bodies := map[string][]byte{}
	for kind, file := range map[string]string{kindSafe: *safeFile, kindUnsafe: *unsafeFile} {
		newCRD, err := read(file)
		if err != nil {
			return err
		}
		newCRD.Status, newCRD.ObjectMeta = oldCRD.Status, oldCRD.ObjectMeta
		req, err := webhooktest.Request(admissionv1.Update, newCRD, oldCRD)
		if err != nil {
			return err
		}
		if bodies[kind], err = webhooktest.Review(req); err != nil {
			return err
		}
	}
	del, err := webhooktest.Request(admissionv1.Delete, nil, oldCRD)
	if err != nil {
		return err
	}
	if bodies[kindDelete], err = webhooktest.Review(del); err != nil {
		return err
	}
	bodies[kindMalformed] = []byte(`{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": `)

	dir, err := os.MkdirTemp("", "soak-webhook")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ca, err := newSoakCA()
	if err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := ca.writeLeaf(certFile, keyFile); err != nil {
		return err
	}

	var servers []*soakServer
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, fm := range []string{"closed", "open"} {
		s, err := startSoakServer(*kappBin, *kubeconfig, dir, fm, certFile, keyFile)
		if err != nil {
			return err
		}
		servers = append(servers, s)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	// As the apiserver calls a webhook: HTTP/1.1 over TLS; here a new
	// connection (a handshake) per review, so that the rotation meets as
	// many handshakes as there are reviews.
	tlsConfig := &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}
	client := &http.Client{Timeout: *timeout + 5*time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("soak: %s at %.1f reviews/s (safe, unsafe, delete, malformed; failMode closed and open, a server each) of %s with %d custom resources; deadline %s; load %s\n",
		*duration, *rate, oldCRD.Name, *objects, *timeout, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("soak: certificate renewed at %s, apiserver killed at %s for %s\n",
		(*duration / 3).Round(time.Second), (*duration * 2 / 3).Round(time.Second), *down)

	start := time.Now()
	ev := &soakEvents{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the faults
		defer wg.Done()
		time.Sleep(time.Until(start.Add(*duration / 3)))
		ev.set(func() { ev.rotated = time.Now() })
		serial2, err := ca.writeLeaf(certFile, keyFile)
		if err != nil {
			ev.set(func() { ev.errs = append(ev.errs, fmt.Errorf("renewing the certificate: %w", err)) })
			return
		}
		for _, s := range servers {
			if err := waitServing(s.addr, tlsConfig, serial2, 30*time.Second); err != nil {
				ev.set(func() { ev.errs = append(ev.errs, fmt.Errorf("server %s: %w", s.failMode, err)) })
			}
		}
		ev.set(func() { ev.rotationSeen = time.Now() })

		time.Sleep(time.Until(start.Add(*duration * 2 / 3)))
		ev.set(func() { ev.stopBegin = time.Now() })
		if out, err := exec.Command(*clusterScript, "stop-apiserver").CombinedOutput(); err != nil {
			ev.set(func() { ev.errs = append(ev.errs, fmt.Errorf("stop-apiserver: %w: %s", err, out)) })
			return
		}
		ev.set(func() { ev.stopEnd = time.Now() })
		time.Sleep(*down)
		ev.set(func() { ev.startBegin = time.Now() })
		if out, err := exec.Command(*clusterScript, "start-apiserver").CombinedOutput(); err != nil {
			ev.set(func() { ev.errs = append(ev.errs, fmt.Errorf("start-apiserver: %w: %s", err, out)) })
			return
		}
		ev.set(func() { ev.startEnd = time.Now() })
	}()

	results := make(chan soakResult, 1024)
	var all []soakResult
	collected := make(chan struct{})
	go func() {
		for r := range results {
			all = append(all, r)
		}
		close(collected)
	}()
	kinds := []string{kindSafe, kindUnsafe, kindDelete, kindMalformed}
	tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
	report := time.NewTicker(*interval)
	var sending sync.WaitGroup
	sent := 0
	fmt.Printf("%8s %8s %10s %10s %12s %12s\n", "time", "sent", "server", "RSS", "goroutines", "in flight")
	printStats := func() {
		for _, s := range servers {
			rss, _ := rssOf(s.cmd.Process.Pid)
			g, inflight := s.scrape()
			s.samples = append(s.samples, soakSample{rss: rss, goroutines: g})
			fmt.Printf("%8s %8d %10s %9.1fM %12d %12d\n", time.Since(start).Round(time.Second), sent, s.failMode,
				float64(rss)/(1<<20), g, inflight)
		}
	}
	printStats()
	for deadline := start.Add(*duration); time.Now().Before(deadline); {
		select {
		case <-tick.C:
			kind := kinds[sent%len(kinds)]
			s := servers[(sent/len(kinds))%len(servers)]
			sent++
			sending.Add(1)
			go func() {
				defer sending.Done()
				results <- s.review(client, kind, bodies[kind], *timeout)
			}()
		case <-report.C:
			printStats()
		}
	}
	tick.Stop()
	report.Stop()
	sending.Wait()
	close(results)
	<-collected
	wg.Wait()
	printStats()
	return summarize(all, servers, ev, start, *timeout)
}

const (
	kindSafe      = "safe"
	kindUnsafe    = "unsafe"
	kindDelete    = "delete"
	kindMalformed = "malformed"
)

// soakEvents are the times of the faults.
type soakEvents struct {
	mu                                       sync.Mutex
	rotated, rotationSeen                    time.Time
	stopBegin, stopEnd, startBegin, startEnd time.Time
	errs                                     []error
}

func (e *soakEvents) set(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
}

// phase says what the apiserver was during [from, to]: "up", "down" (dead
// the whole time) or "edge" (it died or came back meanwhile: either
// verdict is right).
func (e *soakEvents) phase(from, to time.Time) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopBegin.IsZero() || to.Before(e.stopBegin) {
		return "up"
	}
	if !e.stopEnd.IsZero() && from.After(e.stopEnd) && !e.startBegin.IsZero() && to.Before(e.startBegin) {
		return "down"
	}
	if !e.startEnd.IsZero() && from.After(e.startEnd.Add(time.Second)) {
		return "up"
	}
	if !e.stopEnd.IsZero() && from.After(e.stopEnd) && e.startBegin.IsZero() {
		return "down"
	}
	return "edge"
}

// soakServer is one webhook process.
type soakServer struct {
	failMode    string
	cmd         *exec.Cmd
	addr        string
	metricsAddr string
	done        chan error
	samples     []soakSample
}

type soakSample struct {
	rss        int64
	goroutines int
}

var (
	soakServing = regexp.MustCompile(`serving admission reviews on https://(\S+)/validate`)
	soakMetrics = regexp.MustCompile(`serving metrics on http://(\S+)/metrics`)
)

func startSoakServer(kappBin, kubeconfig, dir, failMode, certFile, keyFile string) (*soakServer, error) {
	settings := filepath.Join(dir, "settings-"+failMode+".yaml")
	if err := os.WriteFile(settings, []byte("failMode: "+failMode+"\n"), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("soak-webhook-%d-%s.log", os.Getpid(), failMode))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(kappBin, "tools", "crd-upgrade-safety-webhook", "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--kubeconfig", kubeconfig, "--config", settings,
		"--metrics-bind-address", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "GOGC=400", "GOMEMLIMIT=800MiB") // the install's (examples/webhook/deployment.yaml)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &soakServer{failMode: failMode, cmd: cmd, done: make(chan error, 1)}
	addrs := make(chan [2]string, 2)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if m := soakServing.FindStringSubmatch(line); m != nil {
				addrs <- [2]string{"serving", m[1]}
			}
			if m := soakMetrics.FindStringSubmatch(line); m != nil {
				addrs <- [2]string{"metrics", m[1]}
			}
		}
		_, _ = io.Copy(logFile, stderr)
		s.done <- cmd.Wait()
		_ = logFile.Close()
	}()
	for s.addr == "" || s.metricsAddr == "" {
		select {
		case a := <-addrs:
			if a[0] == "serving" {
				s.addr = a[1]
			} else {
				s.metricsAddr = a[1]
			}
		case err := <-s.done:
			return nil, fmt.Errorf("the %s webhook ended: %v (log: %s)", failMode, err, logPath)
		case <-time.After(30 * time.Second):
			s.stop()
			return nil, fmt.Errorf("the %s webhook did not start within 30s (log: %s)", failMode, logPath)
		}
	}
	fmt.Fprintf(os.Stderr, "soak: webhook failMode %s on %s (pid %d, log %s)\n", failMode, s.addr, cmd.Process.Pid, logPath)
	return s, nil
}

func (s *soakServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
	}
}

// scrape reads go_goroutines and the reviews in flight from /metrics.
func (s *soakServer) scrape() (goroutines, inFlight int) {
	resp, err := http.Get("http://" + s.metricsAddr + "/metrics")
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "go_goroutines":
			goroutines = int(v)
		case "crd_upgrade_safety_webhook_reviews_in_flight":
			inFlight = int(v)
		}
	}
	return goroutines, inFlight
}

// soakResult is one review and its answer.
type soakResult struct {
	kind, failMode string
	sent, answered time.Time
	status         int
	allowed        bool
	message        string
	warnings       []string
	err            error
}

func (s *soakServer) review(client *http.Client, kind string, body []byte, timeout time.Duration) soakResult {
	r := soakResult{kind: kind, failMode: s.failMode, sent: time.Now()}
	url := "https://" + s.addr + "/validate?timeout=" + strconv.Itoa(int(timeout.Seconds())) + "s"
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		r.err, r.answered = err, time.Now()
		return r
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	r.answered, r.status = time.Now(), resp.StatusCode
	if err != nil {
		r.err = err
		return r
	}
	if resp.StatusCode != http.StatusOK {
		r.message = string(data)
		return r
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil || out.Response == nil {
		r.err = fmt.Errorf("an answer that is no AdmissionReview: %v: %.200s", err, data)
		return r
	}
	r.allowed, r.warnings = out.Response.Allowed, out.Response.Warnings
	if out.Response.Result != nil {
		r.message = out.Response.Result.Message
	}
	return r
}

// verdict checks a result against what its phase expects; "" when right.
func (r soakResult) verdict(phase string) string {
	couldNot := strings.Contains(r.message, "could not check") || anyContains(r.warnings, "could not check")
	judgedUp := func() bool {
		switch r.kind {
		case kindSafe:
			return r.allowed && !couldNot
		case kindUnsafe:
			return !r.allowed && strings.Contains(r.message, "error finding")
		case kindDelete:
			return !r.allowed && strings.Contains(r.message, "crdDeletion")
		}
		return false
	}
	judgedDown := func() bool {
		if r.failMode == "closed" {
			return !r.allowed && strings.Contains(r.message, "denied under failMode closed")
		}
		return r.allowed && anyContains(r.warnings, "allowed under failMode open")
	}
	ok := false
	switch {
	case r.kind == kindMalformed:
		ok = r.status == http.StatusBadRequest
	case phase == "up":
		ok = judgedUp()
	case phase == "down":
		ok = judgedDown()
	default:
		ok = judgedUp() || judgedDown()
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("%s review (failMode %s, apiserver %s): status %d allowed %v: %.300s %q", r.kind, r.failMode, phase,
		r.status, r.allowed, r.message, r.warnings)
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

// isHandshakeError tells whether a request failed in its TLS handshake.
func isHandshakeError(err error) bool {
	var rec tls.RecordHeaderError
	var cert *tls.CertificateVerificationError
	var alert tls.AlertError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &rec) || errors.As(err, &cert) || errors.As(err, &alert) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid) || strings.Contains(err.Error(), "tls: ")
}

func summarize(all []soakResult, servers []*soakServer, ev *soakEvents, start time.Time, timeout time.Duration) error {
	sort.Slice(all, func(i, j int) bool { return all[i].sent.Before(all[j].sent) })
	var answered, late, handshake, transport int
	byPhase := map[string]int{}
	downVerdicts := map[string]int{}
	var wrong []string
	var lat []time.Duration
	latByPhase := map[string][]time.Duration{}
	for _, r := range all {
		took := r.answered.Sub(r.sent)
		if r.err != nil {
			if isHandshakeError(r.err) {
				handshake++
			} else {
				transport++
			}
			wrong = append(wrong, fmt.Sprintf("%s review (failMode %s) at %s: %v", r.kind, r.failMode, r.sent.Sub(start).Round(time.Millisecond), r.err))
			continue
		}
		answered++
		lat = append(lat, took)
		if took > timeout {
			late++
		}
		phase := ev.phase(r.sent, r.answered)
		byPhase[phase]++
		latByPhase[phase] = append(latByPhase[phase], took)
		if phase == "down" && r.kind != kindMalformed {
			downVerdicts[fmt.Sprintf("%s %s allowed=%v", r.failMode, r.kind, r.allowed)]++
		}
		if v := r.verdict(phase); v != "" {
			wrong = append(wrong, fmt.Sprintf("at %s: %s", r.sent.Sub(start).Round(time.Millisecond), v))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("\nsoak: %d reviews sent, %d answered, %d not answered (%d TLS handshake failures, %d other transport errors), %d answered after their %s deadline\n",
		len(all), answered, len(all)-answered, handshake, transport, late, timeout)
	if len(lat) > 0 {
		fmt.Printf("soak: latency p50 %s, p99 %s, max %s", round(percentile(lat, 0.5)), round(percentile(lat, 0.99)), round(lat[len(lat)-1]))
		for _, phase := range []string{"up", "down", "edge"} {
			l := latByPhase[phase]
			if len(l) == 0 {
				continue
			}
			sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
			fmt.Printf("; apiserver %s: p50 %s, p99 %s, max %s", phase, round(percentile(l, 0.5)), round(percentile(l, 0.99)), round(l[len(l)-1]))
		}
		fmt.Println()
	}
	ev.mu.Lock()
	at := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Sub(start).Round(100 * time.Millisecond).String()
	}
	fmt.Printf("soak: certificate renewed at %s, served by both servers from %s; handshake failures %d (a new TLS connection per review)\n",
		at(ev.rotated), at(ev.rotationSeen), handshake)
	fmt.Printf("soak: apiserver killed at %s (dead from %s), started at %s, ready at %s\n", at(ev.stopBegin), at(ev.stopEnd), at(ev.startBegin), at(ev.startEnd))
	errs := ev.errs
	ev.mu.Unlock()
	keys := make([]string, 0, len(downVerdicts))
	for k := range downVerdicts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var dv []string
	for _, k := range keys {
		dv = append(dv, fmt.Sprintf("%s: %d", k, downVerdicts[k]))
	}
	fmt.Printf("soak: verdicts by apiserver state: up %d, down %d, edge %d (either verdict); while down: %s\n",
		byPhase["up"], byPhase["down"], byPhase["edge"], strings.Join(dv, ", "))
	for _, s := range servers {
		if len(s.samples) == 0 {
			continue
		}
		first, last := s.samples[0], s.samples[len(s.samples)-1]
		var maxRSS int64
		maxG := 0
		for _, x := range s.samples {
			maxRSS, maxG = max(maxRSS, x.rss), max(maxG, x.goroutines)
		}
		// The first sample is before any review: the flat line starts at
		// the second.
		ref := first
		if len(s.samples) > 2 {
			ref = s.samples[1]
		}
		fmt.Printf("soak: server failMode %s: RSS %.1fM at start, %.1fM after the first interval, %.1fM at the end (max %.1fM); goroutines %d, %d, %d (max %d)\n",
			s.failMode, mb(first.rss), mb(ref.rss), mb(last.rss), mb(maxRSS), first.goroutines, ref.goroutines, last.goroutines, maxG)
	}
	for _, e := range errs {
		wrong = append(wrong, e.Error())
	}
	if len(wrong) > 0 {
		for i, w := range wrong {
			if i == 20 {
				fmt.Printf("  ... and %d more\n", len(wrong)-i)
				break
			}
			fmt.Println("  " + w)
		}
	}
	if len(wrong) > 0 || late > 0 {
		return fmt.Errorf("%d wrong or unanswered reviews, %d late", len(wrong), late)
	}
	fmt.Println("soak: every review answered within its deadline with the verdict its phase expects")
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// rssOf is the resident set size of a process (VmRSS).
func rssOf(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// soakCA issues the serving certificates: the renewal is a new leaf of the
// same CA, as cert-manager renews one.
type soakCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newSoakCA() (*soakCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "soak CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &soakCA{cert: cert, key: key}, err
}

// writeLeaf writes a new serving certificate and key over the files, the
// certificate first (a reader may see the new certificate with the old
// key for a moment, and must keep the old pair then), and returns its
// serial number.
func (ca *soakCA) writeLeaf(certFile, keyFile string) (*big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "crd-upgrade-safety-webhook"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return serial, nil
}

// waitServing waits until addr serves the certificate of that serial.
func waitServing(addr string, cfg *tls.Config, serial *big.Int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		conn, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			got := conn.ConnectionState().PeerCertificates[0].SerialNumber
			_ = conn.Close()
			if got.Cmp(serial) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the renewed certificate not served within %s (last error: %v)", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
