package evaluation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/conversion"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ConversionProbe says how a run probes conversion webhooks (the
// conversionWebhook check; Plan.Conversion).
type ConversionProbe struct {
	// URL and CABundle, when URL is set, replace the clientConfig of every
	// new CRD of the run that converts through a webhook: a webhook the
	// user runs locally (kapp tools crd-upgrade-safety
	// --conversion-webhook-url, --conversion-webhook-ca-file). The probe
	// then runs for those CRDs whatever the update changes, and offline
	// against the --objects samples too.
	URL      string
	CABundle []byte
	// MaxObjects and Timeout bound the probe of one CRD (the webhook's
	// webhook.conversion); 0: all the objects, within liveChecksTimeout.
	MaxObjects int
	Timeout    time.Duration
}

// errProbeDone ends a LIST the probe needs no more of.
var errProbeDone = errors.New("conversion probe done")

// clusterProber is the conversion probe of one pair with a cluster, as
// the engine's one call runs it (crdupgradesafety.ConversionProber):
// probeConversion.
type clusterProber struct {
	pair    Pair
	cfg     *config.Settings
	cluster Cluster
}

func (c *clusterProber) Probe(ctx context.Context) (crdupgradesafety.ConversionResult, error) {
	return probeConversion(ctx, c.pair, c.cfg, c.cluster)
}

// samplesProber is the conversion probe of one pair offline, with the
// --objects samples (crdupgradesafety.ConversionProber): probeSamples.
type samplesProber struct {
	pair Pair
	cfg  *config.Settings
}

func (s *samplesProber) Probe(ctx context.Context) (crdupgradesafety.ConversionResult, error) {
	return probeSamples(ctx, s.pair, s.cfg)
}

// probeConversion runs the conversionWebhook check of an update with a
// cluster: the stored objects, listed at the old storage version page by
// page, through the conversion webhook the new CRD names (or the one of
// ConversionProbe.URL), as the apiserver will send them once the update
// is applied. A webhook the run cannot ask is a finding
// (conversionUnverified), not an error; an error means the run could not
// finish (the deadline, a list the identity may not make).
//
// In a kapp deploy that rolls out the webhook's new code before the CRD
// changes (Pair.Ordering's Shipped workloads), the webhook answering now
// is not the code to judge: no probe, the apply-time verdict instead
// (crdupgradesafety.ConversionAtApplyTime), when objects are stored (none: nothing
// to convert, no verdict). A webhook the run names itself
// (ConversionProbe.URL) is always probed.
func probeConversion(ctx context.Context, p Pair, cfg *config.Settings, cluster Cluster) (crdupgradesafety.ConversionResult, error) {
	if (p.conversion == nil || p.conversion.URL == "") && len(p.Ordering.Shipped()) > 0 {
		verdict := crdupgradesafety.ConversionAtApplyTime(p.Old, p.New, p.Ordering)
		if verdict == nil {
			return nil, nil
		}
		n, err := cluster.CountCustomResources(ctx, p.Old)
		if de := deadlineError(ctx, err, ""); de != nil {
			return nil, fmt.Errorf("counting custom resources of CRD %s for the conversion at apply time: %w", p.New.Name, de)
		}
		if err != nil {
			return nil, fmt.Errorf("counting custom resources of CRD %s for the conversion at apply time: %w", p.New.Name, err)
		}
		if n == 0 {
			return nil, nil
		}
		return verdict, nil
	}
	reader, crd, opts, err := conversionReader(ctx, p, cfg, cluster, finding.SourceCluster)
	if reader == nil || err != nil {
		return nil, err
	}
	if opts == nil { // not verified: the reader says why
		return reader, nil
	}
	storage := storageVersion(p.Old)
	probe := newPager(ctx, crd, reader, opts)
	err = cluster.ListCustomResources(ctx, p.Old, storage, func(objs []map[string]any) error { return probe.page(objs) })
	switch {
	case errors.Is(err, errProbeDone):
	case probe.err != nil:
		return nil, probe.err
	case err != nil:
		if de := deadlineError(ctx, err, fmt.Sprintf("%d objects probed", probe.given)); de != nil {
			return nil, fmt.Errorf("probing the conversion of custom resources of CRD %s: %w", p.New.Name, de)
		}
		if forbidden(err) {
			return nil, fmt.Errorf("listing %s of CRD %s for the conversion probe: %w", p.Old.Spec.Names.Plural, p.New.Name, err)
		}
		reader.Unverified(fmt.Sprintf("listing the stored objects at %s failed: %v", storage, err))
	}
	return reader, nil
}

// probeSamples runs the conversionWebhook check of an update offline,
// against the --objects samples, when the run names a webhook to probe
// (ConversionProbe.URL): the samples are taken at the version of their
// apiVersion.
func probeSamples(ctx context.Context, p Pair, cfg *config.Settings) (crdupgradesafety.ConversionResult, error) {
	if p.conversion == nil || p.conversion.URL == "" || len(p.Samples) == 0 {
		return nil, nil
	}
	reader, crd, opts, err := conversionReader(ctx, p, cfg, nil, finding.SourceSamples)
	if reader == nil || err != nil {
		return nil, err
	}
	if opts != nil {
		probe := newPager(ctx, crd, reader, opts)
		if err := probe.page(p.Samples); err != nil && !errors.Is(err, errProbeDone) {
			return nil, err
		}
	}
	return reader, nil
}

// conversionReader returns the reader of the probe of p, the CRD to probe
// (the new one, with ConversionProbe.URL as its webhook where given) and
// the options to probe with: no reader when p needs no probe; no options
// when the webhook cannot be reached (the reader says why).
func conversionReader(ctx context.Context, p Pair, cfg *config.Settings, cluster ServiceProxier,
	source string) (*crdupgradesafety.ConversionReader, *apiextv1.CustomResourceDefinition, *conversion.Options, error) {

	if !cfg.Checks.CRD.ConversionWebhook.Enabled || p.Old == nil || p.New.Spec.Conversion == nil ||
		p.New.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		return nil, nil, nil, nil
	}
	probe := p.conversion
	if probe == nil {
		probe = &ConversionProbe{}
	}
	newCRD := p.New
	if probe.URL != "" {
		newCRD = p.New.DeepCopy()
		if newCRD.Spec.Conversion.Webhook == nil {
			newCRD.Spec.Conversion.Webhook = &apiextv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}
		}
		u := probe.URL
		newCRD.Spec.Conversion.Webhook.ClientConfig = &apiextv1.WebhookClientConfig{URL: &u, CABundle: probe.CABundle}
	} else if !crdupgradesafety.NeedsConversionProbe(p.Old, p.New) {
		return nil, nil, nil, nil
	}
	reader := crdupgradesafety.NewConversionReader(newCRD, conversionService(newCRD), source,
		crdupgradesafety.ConversionBudget{MaxObjects: probe.MaxObjects, Timeout: probe.Timeout})
	opts := &conversion.Options{MaxObjects: probe.MaxObjects, Timeout: probe.Timeout, StoredVersions: storedAfter(p.Old, p.New)}
	ep, err := conversion.EndpointFor(newCRD)
	if err != nil {
		reader.Unverified(err.Error())
		return reader, nil, nil, nil
	}
	switch {
	case ep.Service != nil && cluster == nil:
		reader.Unverified("a webhook behind a Service is reached through the cluster's service proxy, and the run reads no cluster " +
			"(give --conversion-webhook-url to probe a webhook run locally)")
		return reader, nil, nil, nil
	case ep.Service != nil:
		poster, err := cluster.ServiceProxy(ctx, ep.Service.Namespace, ep.Service.Name, ep.Service.Port, ep.Service.Path)
		if errors.Is(err, ErrNotSupported) {
			return nil, nil, nil, nil
		}
		if err != nil {
			reader.Unverified(err.Error())
			return reader, nil, nil, nil
		}
		opts.Transport = &proxyTransport{Poster: poster, forbidden: func() {
			reader.ProxyForbidden(ep.Service.Namespace, ep.Service.Name, ep.Service.Port)
		}}
	default:
		tr, err := ep.Transport()
		if err != nil {
			reader.Unverified(err.Error())
			return reader, nil, nil, nil
		}
		opts.Transport = tr
	}
	// The CRD probed is the new one (its versions, schemas, review
	// versions), with its webhook's transport.
	return reader, newCRD, opts, nil
}

// proxyTransport posts through the apiserver's service proxy and tells
// the reader (once) when the proxy refused the identity (403): the
// webhook was not asked for lack of create on services/proxy.
type proxyTransport struct {
	kube.Poster
	once      sync.Once
	forbidden func()
}

func (t *proxyTransport) Post(ctx context.Context, body []byte) ([]byte, error) {
	out, err := t.Poster.Post(ctx, body)
	var pe *kube.ProxyError
	if errors.As(err, &pe) && pe.Code == http.StatusForbidden {
		t.once.Do(t.forbidden)
	}
	return out, err
}

// pager probes the objects of a LIST page by page within the budget.
type pager struct {
	ctx      context.Context
	crd      *apiextv1.CustomResourceDefinition
	reader   *crdupgradesafety.ConversionReader
	opts     conversion.Options
	deadline time.Time
	given    int
	stopped  bool
	err      error
}

func newPager(ctx context.Context, crd *apiextv1.CustomResourceDefinition, reader *crdupgradesafety.ConversionReader, opts *conversion.Options) *pager {
	pg := &pager{ctx: ctx, crd: crd, reader: reader, opts: *opts}
	if opts.Timeout > 0 {
		pg.deadline = time.Now().Add(opts.Timeout)
	}
	return pg
}

// page probes one page of objects; past the budget it only counts them.
// It returns errProbeDone once the webhook answered nothing (the rest
// would not be answered either).
func (pg *pager) page(objs []map[string]any) error {
	if pg.stopped {
		return errProbeDone
	}
	n := len(objs)
	if pg.opts.MaxObjects > 0 {
		n = min(n, max(pg.opts.MaxObjects-pg.given, 0))
	}
	opts := pg.opts
	opts.MaxObjects = 0
	if !pg.deadline.IsZero() {
		opts.Timeout = time.Until(pg.deadline)
		if opts.Timeout <= 0 {
			pg.reader.Counted(len(objs), conversion.CutTimeout)
			return nil
		}
	}
	if n < len(objs) {
		pg.reader.Counted(len(objs)-n, conversion.CutMaxObjects)
	}
	if n == 0 {
		return nil
	}
	batch := make([]*unstructured.Unstructured, n)
	for i := range n {
		batch[i] = &unstructured.Unstructured{Object: objs[i]}
	}
	pg.given += n
	rep, err := conversion.Probe(pg.ctx, pg.crd, batch, opts)
	if err != nil {
		pg.err = err
		return err
	}
	pg.reader.Add(rep)
	if rep.Unverified() {
		pg.stopped = true
		return errProbeDone
	}
	return nil
}

// storedAfter is status.storedVersions once new is applied over old: the
// live CRD's, and the new storage version.
func storedAfter(old, new *apiextv1.CustomResourceDefinition) []string {
	out := append([]string(nil), old.Status.StoredVersions...)
	if len(out) == 0 {
		if v := storageVersion(old); v != "" {
			out = append(out, v)
		}
	}
	if v := storageVersion(new); v != "" {
		found := false
		for _, s := range out {
			found = found || s == v
		}
		if !found {
			out = append(out, v)
		}
	}
	return out
}

func storageVersion(crd *apiextv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
