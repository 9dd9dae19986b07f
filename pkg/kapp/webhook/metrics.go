package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MetricsPath is where the metrics server answers.
const MetricsPath = "/metrics"

// metricPrefix prefixes the name of every metric of the webhook.
const metricPrefix = "crd_upgrade_safety_webhook_"

// Decisions of a review (the decision label).
const (
	DecisionAllowed = "allowed"
	DecisionDenied  = "denied"
	DecisionError   = "error"
)

// Causes of a failure to judge (the cause label of
// crd_upgrade_safety_webhook_failures_total).
const (
	CauseAPIError = "api_error"
	// CauseForbidden: the webhook's role may not make a read the review
	// needs (kube.ForbiddenError): regenerate the role.
	CauseForbidden = "forbidden"
	CauseTimeout   = "timeout"
	CausePanic     = "panic"
	CauseDecode    = "decode"
	CauseOther     = "other"
)

// Metrics are the webhook's Prometheus metrics, in a registry of their
// own (with the Go runtime's and the process's). A nil *Metrics records
// nothing.
type Metrics struct {
	Registry *prometheus.Registry

	reviewDuration *prometheus.HistogramVec
	findings       *prometheus.CounterVec
	objectsRead    prometheus.Counter
	inFlight       prometheus.Gauge
	failures       *prometheus.CounterVec
}

// NewMetrics returns the webhook's metrics; certs, when not nil, gives the
// expiry of the certificate served, read at each scrape.
func NewMetrics(certs *CertReloader) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		reviewDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricPrefix + "review_duration_seconds",
			Help:    "Time to judge an admission review, from its decoded request to its response, by operation and decision (allowed, denied, error).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30},
		}, []string{"operation", "decision"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "decisions_by_check_total",
			Help: "Findings that decided reviews, by check ID and severity: the error findings of denied reviews (severity error) and the warnings returned (severity warning).",
		}, []string{"check", "severity"}),
		objectsRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricPrefix + "stored_objects_read_total",
			Help: "Stored custom resources read from the cluster to judge reviews.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricPrefix + "reviews_in_flight",
			Help: "Admission reviews being served, waiting for a slot included.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricPrefix + "failures_total",
			Help: "Requests the webhook could not judge (failMode decides their answer; a request that does not decode is refused), by cause: api_error, forbidden, timeout, panic, decode, other.",
		}, []string{"cause"}),
	}
	m.Registry.MustRegister(m.reviewDuration, m.findings, m.objectsRead, m.inFlight, m.failures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range []string{CauseAPIError, CauseForbidden, CauseTimeout, CausePanic, CauseDecode, CauseOther} {
		m.failures.WithLabelValues(c) // every cause present from the start, at 0: rate() sees the first failure
	}
	if certs != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: metricPrefix + "certificate_expiry_timestamp_seconds",
			Help: "NotAfter of the serving certificate currently served, in seconds since the Unix epoch (0: none loaded).",
		}, func() float64 {
			if t := certs.NotAfter(); !t.IsZero() {
				return float64(t.Unix())
			}
			return 0
		}))
	}
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// observe records one review.
func (m *Metrics) observe(op admissionv1.Operation, v verdict, took time.Duration) {
	if m == nil {
		return
	}
	decision := DecisionAllowed
	switch {
	case v.skip != "":
	case errors.Is(v.err, config.ErrInvalidWaiver):
		decision = DecisionDenied
	case v.err != nil:
		decision = DecisionError
		m.failures.WithLabelValues(failureCause(v)).Inc()
	default:
		denied := false
		for _, f := range v.findings {
			denied = denied || f.Severity == finding.SeverityError
		}
		if denied {
			decision = DecisionDenied
		}
		for _, f := range v.findings {
			switch {
			case f.Severity != finding.SeverityError:
				m.findings.WithLabelValues(f.Check, "warning").Inc()
			case denied:
				m.findings.WithLabelValues(f.Check, "error").Inc()
			}
		}
	}
	m.reviewDuration.WithLabelValues(strings.ToLower(string(op)), decision).Observe(took.Seconds())
}

// failed records a request refused before it could be judged.
func (m *Metrics) failed(cause string) {
	if m != nil {
		m.failures.WithLabelValues(cause).Inc()
	}
}

func (m *Metrics) addObjectsRead(n int) {
	if m != nil {
		m.objectsRead.Add(float64(n))
	}
}

func (m *Metrics) inFlightAdd(d float64) {
	if m != nil {
		m.inFlight.Add(d)
	}
}

// failureCause is the cause label of a verdict's error, from its facts.
func failureCause(v verdict) string {
	var status apierrors.APIStatus
	var netErr net.Error
	var clusterErr *clusterError
	var forbidden *kube.ForbiddenError
	switch {
	case errors.Is(v.err, ErrPanic):
		return CausePanic
	case v.late:
		return CauseTimeout
	case errors.Is(v.err, errDecode):
		return CauseDecode
	case errors.As(v.err, &forbidden):
		return CauseForbidden
	case errors.As(v.err, &status), errors.As(v.err, &netErr), errors.As(v.err, &clusterErr):
		return CauseAPIError
	}
	return CauseOther
}

// errDecode is wrapped by the error of a request whose objects do not
// decode as CRDs, or are missing.
var errDecode = errors.New("the request's objects do not decode")

// decodeError marks err as a decoding error (errDecode) without changing
// its text.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() []error {
	return []error{e.err, errDecode}
}

func asDecodeError(err error) error {
	if err == nil {
		return nil
	}
	return &decodeError{err}
}

// clusterError marks an error that the cluster returned, without changing
// its text.
type clusterError struct{ err error }

func (e *clusterError) Error() string { return e.err.Error() }
func (e *clusterError) Unwrap() error { return e.err }

func fromCluster(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &clusterError{err}
}

// countingCluster counts the stored objects a review reads and marks the
// cluster's errors.
type countingCluster struct {
	evaluation.Cluster
	read atomic.Int64
}

func (c *countingCluster) GetCRDs(ctx context.Context, names []string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	crds, err := c.Cluster.GetCRDs(ctx, names)
	return crds, fromCluster(err)
}

func (c *countingCluster) ListCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	fn func(objs []map[string]any) error) error {
	var fnErr error
	err := c.Cluster.ListCustomResources(ctx, crd, version, func(objs []map[string]any) error {
		c.read.Add(int64(len(objs)))
		fnErr = fn(objs)
		return fnErr
	})
	if err != nil && fnErr != nil && errors.Is(err, fnErr) {
		return err // the evaluation's own error
	}
	return fromCluster(err)
}

func (c *countingCluster) CountCustomResources(ctx context.Context, crd *apiextv1.CustomResourceDefinition) (int, error) {
	n, err := c.Cluster.CountCustomResources(ctx, crd)
	return n, fromCluster(err)
}

func (c *countingCluster) DependentsOf(ctx context.Context, apiVersions []string, kind string, fn func(kube.Dependent)) (int, []kube.Skipped, error) {
	read, skipped, err := c.Cluster.DependentsOf(ctx, apiVersions, kind, fn)
	return read, skipped, fromCluster(err)
}

func (c *countingCluster) ListStorageVersionMigrations(ctx context.Context) ([]unstructured.Unstructured, error) {
	l, err := c.Cluster.ListStorageVersionMigrations(ctx)
	return l, fromCluster(err)
}

// counting wraps cluster for one review. Every capability of the cluster
// is a method of evaluation.Cluster, which countingCluster embeds: none is
// lost (TestCountingKeepsEveryCapability).
func counting(cluster evaluation.Cluster) (evaluation.Cluster, *countingCluster) {
	c := &countingCluster{Cluster: cluster}
	return c, c
}
