package evaluation

import (
	"context"
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// objectsPerRead batches stored custom resources for one
// objects.ObjectReader.Read: pages are released once read, so
// memory stays flat however many objects a CRD has.
const objectsPerRead = 2000

// readBatch hands one batch of stored custom resources to the engine;
// tests replace it to watch the batches.
var readBatch = func(read func([]map[string]any) error, batch []map[string]any) error { return read(batch) }

// livePair runs the live checks of one pair after its offline checks (o)
// that are the service's own, and adapts the cluster to the sources the
// engine's one call reads for the rest: the dry run, then either the count
// of the custom resources a replace deletes (Deletion) or, for the stored
// ones, the source the engine reads them from (stored: nil when none are
// to be read); the managedFields and ownerReferences of the objects
// (Pair.ManagedFields, Pair.Dependents). The caller hands the pair to
// crdupgradesafety.Judge, then says once what a denial of the dry run by
// the CRDUpgradeSafety admission webhook adds (denial).
func livePair(ctx context.Context, p Pair, o pairOutcome, cfg *config.Settings,
	cluster Cluster, tracker *liveTracker) (jp crdupgradesafety.Pair, stored crdupgradesafety.Objects, denial *webhookDenial, err error) {

	jp = crdupgradesafety.Pair{Old: p.Old, New: p.New, Findings: o.findings, Compared: true,
		Validators: o.validators, Policy: o.policy, Ordering: p.Ordering}
	crd := &cfg.Checks.CRD
	// A fallback-on-replace update the validation already refused needs no
	// dry run: the apiserver stops at the same validation.
	decided := p.Strategy == StrategyFallbackOnReplace && o.replace != ""
	if p.Send != nil && !o.rejected && !decided && needsDryRun(p, cfg) {
		var fs []finding.Finding
		var rejected bool
		var replace string
		fs, rejected, replace, denial, err = dryRunFindings(ctx, p, cfg, cluster)
		if err != nil {
			return jp, nil, nil, err
		}
		jp.Live = append(jp.Live, fs...)
		if rejected {
			o.rejected = true
			if p.Strategy == StrategyAlwaysReplace {
				o.replace = "" // the delete is refused: nothing is lost
			}
		}
		if replace != "" {
			o.replace = replace
		}
	}
	switch {
	case p.Old == nil:
	case o.replace != "":
		if crd.CRDDeletion.Enabled {
			count, err := cluster.CountCustomResources(ctx, p.Old)
			if de := deadlineError(ctx, err, ""); de != nil {
				return jp, nil, nil, fmt.Errorf("counting custom resources of CRD %s: %w", p.New.Name, de)
			}
			if err != nil {
				return jp, nil, nil, fmt.Errorf("checking replace of CRD %s: %w", p.New.Name, err)
			}
			jp.Deletion = &crdupgradesafety.Deletion{Objects: count - p.AlsoDeleted, Cause: o.replace}
		}
	case crd.ExistingResources.Enabled && !o.rejected:
		stored = &clusterObjects{pair: p, cluster: cluster, tracker: tracker}
	}
	if p.Old != nil && o.replace == "" && !o.rejected {
		jp.ManagedFields = &managedFieldsLister{pair: p, cluster: cluster, tracker: tracker}
	}
	if p.Old != nil && o.replace == "" && !o.rejected {
		jp.Conversion = &clusterProber{pair: p, cfg: cfg, cluster: cluster}
	}
	if p.Old != nil && !o.rejected {
		jp.Dependents = &clusterDependents{pair: p, lister: cluster}
	}
	return jp, stored, denial, nil
}

// clusterDependents is the cluster's objects whose ownerReferences name an
// owner, as the engine's ownerReferences check reads them
// (crdupgradesafety.Dependents): the metadata of the objects of every
// kind, once. A Cluster that cannot list dependents (ErrNotSupported: a
// test's) skips the check (crdupgradesafety.ErrNoDependents).
type clusterDependents struct {
	pair   Pair
	lister DependentsLister
}

func (c *clusterDependents) DependentsOf(ctx context.Context, apiVersions []string, kind string,
	add func(ownerAPIVersion, resource, name string)) (int, []crdupgradesafety.UnreadableResource, error) {

	read, skipped, err := c.lister.DependentsOf(ctx, apiVersions, kind, func(d kube.Dependent) {
		add(d.OwnerAPIVersion, d.Resource, d.Name)
	})
	if errors.Is(err, ErrNotSupported) {
		return 0, nil, crdupgradesafety.ErrNoDependents
	}
	if de := deadlineError(ctx, err, fmt.Sprintf("%d objects read", read)); de != nil {
		return 0, nil, fmt.Errorf("reading ownerReferences to CRD %s: %w", c.pair.New.Name, de)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading ownerReferences to CRD %s: %w", c.pair.New.Name, err)
	}
	unreadable := make([]crdupgradesafety.UnreadableResource, 0, len(skipped))
	for _, s := range skipped {
		unreadable = append(unreadable, crdupgradesafety.UnreadableResource{Resource: s.Name(), Forbidden: s.Forbidden, Err: s.Err})
	}
	return read, unreadable, nil
}

// managedFieldsLister is the cluster's stored custom resources of one pair
// as the engine's managedFields check reads them (crdupgradesafety.Lister):
// one list, page by page, at the version the engine asks for. A list that
// fails through the conversion webhook is crdupgradesafety.UnreadableError
// (a finding rather than an error).
type managedFieldsLister struct {
	pair    Pair
	cluster Cluster
	tracker *liveTracker
}

func (m *managedFieldsLister) List(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	read func([]map[string]any) error) error {

	pages, listed := 0, 0
	err := m.cluster.ListCustomResources(ctx, crd, version, func(objs []map[string]any) error {
		pages, listed = pages+1, listed+len(objs)
		if err := read(objs); err != nil {
			return err
		}
		m.tracker.add(0, len(objs))
		return nil
	})
	if de := deadlineError(ctx, err, pagesRead(pages, listed)); de != nil {
		return fmt.Errorf("listing %s of CRD %s for their managedFields: %w", crd.Spec.Names.Plural, m.pair.New.Name, de)
	}
	if err != nil {
		if webhook := conversionService(crd); webhook != "" && !forbidden(err) {
			return &crdupgradesafety.UnreadableError{Webhook: webhook, Err: err}
		}
		return fmt.Errorf("checking the managedFields of custom resources of CRD %s: %w", m.pair.New.Name, err)
	}
	return nil
}

// clusterObjects is the cluster's stored custom resources of one pair as
// the engine reads them (crdupgradesafety.Objects): the pages of a LIST at
// the version asked for (converted through the CRD's conversion webhook if
// it has one, so the engine reads no version it need not), handed on in
// batches of objectsPerRead (pages are released once read, so memory stays
// flat however many objects a CRD has). A read that fails through the
// conversion webhook is crdupgradesafety.UnreadableError (a finding rather
// than an error).
type clusterObjects struct {
	pair    Pair
	cluster Cluster
	tracker *liveTracker
}

func (c *clusterObjects) Source() string { return finding.SourceCluster }

func (c *clusterObjects) Eager() bool { return false }

func (c *clusterObjects) List(ctx context.Context, crd *apiextv1.CustomResourceDefinition, version string,
	read func([]map[string]any) error) error {

	var batch []map[string]any
	pages, listed := 0, 0
	flush := func() error {
		if err := readBatch(read, batch); err != nil {
			return err
		}
		c.tracker.add(0, len(batch))
		clear(batch) // release the objects now, not when overwritten
		batch = batch[:0]
		return nil
	}
	var readerErr error
	err := c.cluster.ListCustomResources(ctx, crd, version, func(objs []map[string]any) error {
		pages, listed = pages+1, listed+len(objs)
		batch = append(batch, objs...)
		if len(batch) >= objectsPerRead {
			if readerErr = flush(); readerErr != nil {
				return readerErr
			}
		}
		return nil
	})
	if readerErr != nil {
		return readerErr
	}
	name := c.pair.New.Name
	if de := deadlineError(ctx, err, pagesRead(pages, listed)); de != nil {
		return fmt.Errorf("listing %s of CRD %s at version %s: %w", crd.Spec.Names.Plural, name, version, de)
	}
	if err != nil {
		if webhook := conversionService(crd); webhook != "" && !forbidden(err) {
			return &crdupgradesafety.UnreadableError{Webhook: webhook, Err: err}
		}
		return fmt.Errorf("checking existing custom resources of CRD %s: %w", name, err)
	}
	if len(batch) > 0 {
		return flush()
	}
	return nil
}

// forbidden reports whether err is a read the client may not make (RBAC):
// a failure of the reader's role, not of the CRD's conversion webhook.
func forbidden(err error) bool {
	var fe *kube.ForbiddenError
	return errors.As(err, &fe)
}

// conversionService names the conversion webhook of a CRD ("namespace/name"
// of its Service, or its URL), "" when it has none.
func conversionService(crd *apiextv1.CustomResourceDefinition) string {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return ""
	}
	cc := c.Webhook.ClientConfig
	if cc.Service != nil {
		return "service " + cc.Service.Namespace + "/" + cc.Service.Name
	}
	if cc.URL != nil {
		return "url " + *cc.URL
	}
	return "webhook"
}

// removalFindings is the one call of a removal: the custom resources the
// change set deletes with the CRD, counted.
func removalFindings(ctx context.Context, r Removal, cfg *config.Settings,
	cluster Cluster) ([]finding.Finding, error) {

	n, err := cluster.CountCustomResources(ctx, r.CRD)
	if de := deadlineError(ctx, err, ""); de != nil {
		return nil, fmt.Errorf("counting custom resources of CRD %s: %w", r.CRD.Name, de)
	}
	if err != nil {
		return nil, fmt.Errorf("checking deletion of CRD %s: %w", r.CRD.Name, err)
	}
	return crdupgradesafety.Judge(ctx, crdupgradesafety.Pair{Old: r.CRD,
		Deletion: &crdupgradesafety.Deletion{Objects: n - r.AlsoDeleted}}, cfg, nil)
}
