package evaluation

import (
	"context"
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
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

// livePairFindings runs the live checks of one pair after its offline
// checks (o): the dry run, then either the count of the custom resources a
// replace deletes or, for the stored ones, the source the engine reads
// them from (stored: nil when none are to be read; the caller hands it to
// crdupgradesafety.Judge, then says once what a denial of the dry run by
// the CRDUpgradeSafety admission webhook adds: denial).
func livePairFindings(ctx context.Context, p Pair, o pairOutcome, cfg *config.Settings,
	cluster Cluster, tracker *liveTracker) (findings []finding.Finding, stored crdupgradesafety.Objects, denial *webhookDenial, err error) {

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
			return nil, nil, nil, err
		}
		findings = append(findings, fs...)
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
				return nil, nil, nil, fmt.Errorf("counting custom resources of CRD %s: %w", p.New.Name, de)
			}
			if err != nil {
				return nil, nil, nil, fmt.Errorf("checking replace of CRD %s: %w", p.New.Name, err)
			}
			findings = append(findings, objects.Deletion(p.New.Name, count-p.AlsoDeleted, o.replace, cfg)...)
		}
	case crd.ExistingResources.Enabled && !o.rejected:
		stored = &clusterObjects{pair: p, cluster: cluster, tracker: tracker}
	}
	if p.Old != nil && o.replace == "" && !o.rejected && crd.ManagedFields.Enabled {
		fs, err := readManagedFields(ctx, p, cfg, cluster, tracker)
		if err != nil {
			return nil, nil, nil, err
		}
		findings = append(findings, fs...)
	}
	if p.Old != nil && o.replace == "" && !o.rejected && crd.ConversionWebhook.Enabled {
		fs, err := probeConversion(ctx, p, cfg, cluster)
		if err != nil {
			return nil, nil, nil, err
		}
		findings = append(findings, fs...)
	}
	if p.Old != nil && !o.rejected && crd.OwnerReferences.Enabled {
		fs, err := readOwnerReferences(ctx, p, cfg, cluster)
		if err != nil {
			return nil, nil, nil, err
		}
		findings = append(findings, fs...)
	}
	return findings, stored, denial, nil
}

// readOwnerReferences runs the ownerReferences check of an update that
// removes a version (none otherwise: nothing is read): the metadata of the
// objects of every kind, once, for ownerReferences naming the CRD's kind at
// a removed version. A Cluster that cannot list dependents
// (ErrNotSupported: a test's) skips it.
func readOwnerReferences(ctx context.Context, pair Pair, cfg *config.Settings, lister DependentsLister) ([]finding.Finding, error) {
	reader := objects.NewOwnerReferencesReader(pair.Old, pair.New)
	if reader == nil {
		return nil, nil
	}
	apiVersions, kind := reader.Owner()
	read, skipped, err := lister.DependentsOf(ctx, apiVersions, kind, func(d kube.Dependent) {
		reader.Add(d.OwnerAPIVersion, d.Resource, d.Name)
	})
	if errors.Is(err, ErrNotSupported) {
		return nil, nil
	}
	if de := deadlineError(ctx, err, fmt.Sprintf("%d objects read", read)); de != nil {
		return nil, fmt.Errorf("reading ownerReferences to CRD %s: %w", pair.New.Name, de)
	}
	if err != nil {
		return nil, fmt.Errorf("reading ownerReferences to CRD %s: %w", pair.New.Name, err)
	}
	unreadable := make([]objects.UnreadableResource, 0, len(skipped))
	for _, s := range skipped {
		unreadable = append(unreadable, objects.UnreadableResource{Resource: s.Name(), Forbidden: s.Forbidden, Err: s.Err})
	}
	reader.Done(read, unreadable)
	return reader.Findings(cfg), nil
}

// readManagedFields runs the managedFields check of an update that removes
// or unserves a version (none otherwise: no object is read): one list of
// the stored objects, at a version the live CRD serves (managedFields are
// the same at every version).
func readManagedFields(ctx context.Context, pair Pair, cfg *config.Settings, cluster Cluster,
	tracker *liveTracker) ([]finding.Finding, error) {

	reader := objects.NewManagedFieldsReader(pair.Old, pair.New, cfg.KubeVersion)
	if reader == nil {
		return nil, nil
	}
	version := ""
	for _, v := range pair.Old.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return nil, nil // nothing served: nothing a client can apply
	}
	pages, listed := 0, 0
	err := cluster.ListCustomResources(ctx, pair.Old, version, func(objs []map[string]any) error {
		pages, listed = pages+1, listed+len(objs)
		reader.Read(objs)
		tracker.add(0, len(objs))
		return nil
	})
	if de := deadlineError(ctx, err, pagesRead(pages, listed)); de != nil {
		return nil, fmt.Errorf("listing %s of CRD %s for their managedFields: %w", pair.Old.Spec.Names.Plural, pair.New.Name, de)
	}
	if err != nil {
		if webhook := conversionService(pair.Old); webhook != "" && !forbidden(err) {
			return objects.Unreadable(pair.New.Name, version, webhook, err, cfg), nil
		}
		return nil, fmt.Errorf("checking the managedFields of custom resources of CRD %s: %w", pair.New.Name, err)
	}
	return reader.Findings(cfg), nil
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

func removalFindings(ctx context.Context, r Removal, cfg *config.Settings,
	cluster Cluster) ([]finding.Finding, error) {

	n, err := cluster.CountCustomResources(ctx, r.CRD)
	if de := deadlineError(ctx, err, ""); de != nil {
		return nil, fmt.Errorf("counting custom resources of CRD %s: %w", r.CRD.Name, de)
	}
	if err != nil {
		return nil, fmt.Errorf("checking deletion of CRD %s: %w", r.CRD.Name, err)
	}
	return objects.Deletion(r.CRD.Name, n-r.AlsoDeleted, "", cfg), nil
}
