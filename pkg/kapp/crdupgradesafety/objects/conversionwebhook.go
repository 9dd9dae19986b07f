package objects

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/conversion"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// conversionWebhookCheck: the stored objects through the new conversion
// webhook (ConversionReader).
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckConversionWebhook}, Runs: finding.RunsLive,
	Remedy: finding.RemedyFixConversion})

// NeedsConversionProbe reports whether an update of old to new is one the
// conversion probe runs for live: new converts through a webhook and the
// update changes the versions (their names, which are served, the storage
// version) or the conversion configuration (strategy, webhook client
// config, review versions). A schema edit alone does not: the conversion
// code it runs is the one already trusted with the data (the stored objects
// are read through it by existingResources).
func NeedsConversionProbe(old, new *apiextv1.CustomResourceDefinition) bool {
	if old == nil || !hasConversionWebhook(new) {
		return false
	}
	// As the apiserver stores them: the live CRD has its defaults (a
	// service's port 443), a file may not.
	old, new = defaulted(old), defaulted(new)
	if !equality.Semantic.DeepEqual(old.Spec.Conversion, new.Spec.Conversion) {
		return true
	}
	type shape struct {
		name            string
		served, storage bool
	}
	shapes := func(crd *apiextv1.CustomResourceDefinition) []shape {
		out := make([]shape, 0, len(crd.Spec.Versions))
		for _, v := range crd.Spec.Versions {
			out = append(out, shape{v.Name, v.Served, v.Storage})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return out
	}
	return !slices.Equal(shapes(old), shapes(new))
}

func defaulted(crd *apiextv1.CustomResourceDefinition) *apiextv1.CustomResourceDefinition {
	c := &apiextv1.CustomResourceDefinition{Spec: apiextv1.CustomResourceDefinitionSpec{
		Conversion: crd.Spec.Conversion.DeepCopy(), PreserveUnknownFields: crd.Spec.PreserveUnknownFields}}
	c.Spec.Versions = make([]apiextv1.CustomResourceDefinitionVersion, len(crd.Spec.Versions))
	for i, v := range crd.Spec.Versions {
		c.Spec.Versions[i] = apiextv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served, Storage: v.Storage}
	}
	apiextv1.SetObjectDefaults_CustomResourceDefinition(c)
	apiextv1.SetDefaults_CustomResourceDefinitionSpec(&c.Spec)
	if w := c.Spec.Conversion.Webhook; w != nil && w.ClientConfig != nil && len(w.ClientConfig.CABundle) == 0 {
		w.ClientConfig.CABundle = nil
	}
	return c
}

func hasConversionWebhook(crd *apiextv1.CustomResourceDefinition) bool {
	c := crd.Spec.Conversion
	return c != nil && c.Strategy == apiextv1.WebhookConverter
}

// ConversionBudget is the budget a probe ran with, reported when it cut
// the probe short (0: none).
type ConversionBudget struct {
	MaxObjects int
	Timeout    time.Duration
}

// ConversionReader is the conversionWebhook Check: it gathers the reports
// of the conversion probe (conversion.Probe) over the stored objects of an
// updated CRD, page by page, keeping counts and the first objects by name
// (memory stays bounded however many objects there are), and turns them
// into findings: objects the new webhook refuses (error: the resource
// becomes unreadable), fields lost on a round trip (data loss), between
// two non-storage versions while storedVersions holds several (error),
// stash annotations near the limit (annotationEnforcement), and a webhook
// that could not be asked (failMode: conversionUnverified).
type ConversionReader struct {
	crd, kind, source string
	// Webhook names the webhook probed ("service ns/name", "url ...").
	webhook string
	budget  ConversionBudget

	objects, probed int
	cut             conversion.Cut
	storedVersions  []string
	refusals        map[refusalKey]*convAcc
	losses          map[lossKey]*convAcc
	annotations     map[string]*convAcc
	batches         []conversion.BatchRefusal
	// unverified says why the webhook could not be asked ("" when it was).
	unverified string
	// proxyForbidden is the grant the identity lacks to reach the webhook
	// through the apiserver's service proxy (ProxyForbidden), "" when none.
	proxyForbidden string
}

type refusalKey struct {
	from, to string
	hop      bool
}

type lossKey struct {
	version string
	path    schemapath.Path
}

// convAcc counts the objects of one finding and keeps the first few by
// name.
type convAcc struct {
	objects  int
	examples []finding.ObjectEffect
	checks   map[conversion.Check]bool
	trips    map[string]bool
	bytes    int
}

func (a *convAcc) add(ex finding.ObjectEffect) {
	a.objects++
	i := sort.Search(len(a.examples), func(i int) bool { return a.examples[i].Object >= ex.Object })
	if i >= finding.MaxExamples {
		return
	}
	a.examples = slices.Insert(a.examples, i, ex)
	if len(a.examples) > finding.MaxExamples {
		a.examples = a.examples[:finding.MaxExamples]
	}
}

// NewConversionReader returns the reader of the probe of crd (the new
// CRD) against webhook (how outputs name it), for objects from source
// (SourceCluster or SourceSamples), probed within budget.
func NewConversionReader(crd *apiextv1.CustomResourceDefinition, webhook, source string, budget ConversionBudget) *ConversionReader {
	return &ConversionReader{crd: crd.Name, kind: crd.Spec.Names.Kind, source: source, webhook: webhook, budget: budget,
		refusals: map[refusalKey]*convAcc{}, losses: map[lossKey]*convAcc{}, annotations: map[string]*convAcc{}}
}

// Add gathers one report of the probe (a page of objects).
func (r *ConversionReader) Add(rep *conversion.Report) {
	r.objects += rep.Objects
	r.probed += rep.Probed
	if rep.Cut != conversion.CutNone && r.cut == conversion.CutNone {
		r.cut = rep.Cut
	}
	if len(rep.StoredVersions) > len(r.storedVersions) {
		r.storedVersions = rep.StoredVersions
	}
	if rep.Unverified() {
		why := "it answered none of the reviews sent"
		for _, o := range rep.Results {
			if len(o.Refusals) > 0 {
				why = o.Refusals[0].Detail
				break
			}
		}
		r.Unverified(why)
		return
	}
	for _, o := range rep.Results {
		name := o.Object.String()
		for _, rf := range o.Refusals {
			k := refusalKey{from: rf.From, to: rf.To, hop: rf.NonStorageHop}
			a := r.refusals[k]
			if a == nil {
				a = &convAcc{checks: map[conversion.Check]bool{}}
				r.refusals[k] = a
			}
			a.checks[rf.Check] = true
			a.add(finding.ObjectEffect{Object: name, Type: string(rf.Check), Detail: rf.Detail})
		}
		// One object counts once per lost field and version, whatever
		// round trips lose it.
		seen := map[lossKey]bool{}
		for _, l := range o.Losses {
			version := l.Trip[len(l.Trip)-1]
			for _, p := range l.Paths {
				k := lossKey{version: version, path: conversionSchemaPath(p)}
				a := r.losses[k]
				if a == nil {
					a = &convAcc{trips: map[string]bool{}}
					r.losses[k] = a
				}
				a.trips[strings.Join(l.Trip, " -> ")] = true
				if !seen[k] {
					seen[k] = true
					a.add(finding.ObjectEffect{Object: name, Field: strings.TrimPrefix(p, "."), SchemaPath: k.path})
				}
			}
		}
		if an := o.Annotations; an != nil {
			a := r.annotations[an.Version]
			if a == nil {
				a = &convAcc{}
				r.annotations[an.Version] = a
			}
			a.bytes = max(a.bytes, an.Bytes)
			a.add(finding.ObjectEffect{Object: name, Field: "metadata.annotations", Value: fmt.Sprintf("%d bytes", an.Bytes)})
		}
	}
	for _, b := range rep.BatchRefusals {
		merged := false
		for i, have := range r.batches {
			if have.To == b.To && have.Check == b.Check {
				r.batches[i].Objects = max(have.Objects, b.Objects)
				merged = true
			}
		}
		if !merged {
			r.batches = append(r.batches, b)
		}
	}
}

// Unverified records that the webhook could not be asked, and why (the
// transport's error, the list's): the conversion is not verified.
func (r *ConversionReader) Unverified(why string) {
	if r.unverified == "" {
		r.unverified = why
	}
}

// ProxyForbidden records that the apiserver's service proxy refused the
// run's identity (403) the Service namespace/name on port: the webhook
// was not asked because the identity may not create services/proxy on
// it. The conversion-not-verified finding's remedy then names the grant
// (create on services/proxy, resourceNames https:<name>:<port>, in the
// namespace), as the ownerReferences check names the lists it may not make.
func (r *ConversionReader) ProxyForbidden(namespace, name string, port int32) {
	if r.proxyForbidden == "" {
		r.proxyForbidden = fmt.Sprintf("create on services/proxy %q in namespace %s", fmt.Sprintf("https:%s:%d", name, port), namespace)
	}
}

// Counted records objects not sent to the probe because the budget ran
// out (cut: which part of it): they count as objects, not as probed.
func (r *ConversionReader) Counted(objects int, cut conversion.Cut) {
	r.objects += objects
	if objects > 0 && r.cut == conversion.CutNone {
		r.cut = cut
	}
}

// FindingsFor are the conversionWebhook findings of what was gathered,
// under the pair's policy p (a list of its own: Policy.Sub), judged with
// the pair's (crdupgradesafety.Judge, Pair.Conversion).
func (r *ConversionReader) FindingsFor(p *finding.Policy) []finding.Finding {
	c := p.Settings.Checks.CRD.ConversionWebhook
	if !c.Enabled {
		return nil
	}
	remedy := &finding.Remedy{Action: finding.RemedyFixConversion}
	if r.unverified == "" && r.probed == 0 && r.cut == conversion.CutTimeout {
		r.unverified = fmt.Sprintf("no object was probed within the budget (%s)", r.budgetText())
	}
	if r.unverified != "" {
		fail := p.Settings.FailDecisionFor(config.FailConversionUnverified, nil)
		before := len(p.Findings)
		remedy := &finding.Remedy{Action: finding.RemedyVerifyConversion}
		if r.proxyForbidden != "" {
			remedy.Resources = []string{r.proxyForbidden}
			remedy.Command = finding.ConversionProxyRBACCommand
		}
		p.CRDLevelWith(fail.Decision.Enforcement(), "", config.CheckConversionWebhook, remedy,
			finding.Change{Kind: "unverified"},
			"conversion not verified: the conversion webhook the new CRD names (%s) could not be asked what it does to the stored %s (failMode %s)",
			r.webhook, plural.Noun(r.kind), fail.Mode)
		for i := before; i < len(p.Findings); i++ {
			// Why, in the words of the transport or the apiserver.
			p.Findings[i].ReadError = finding.BoundText(r.unverified, finding.MaxMessageBytes)
		}
		return p.Findings
	}
	impact := func(a *convAcc, e finding.Effect) *finding.Impact {
		return &finding.Impact{Source: r.source, Kind: r.kind, Objects: r.probed, Affected: a.objects, VersionAffected: a.objects,
			Effects: []finding.EffectCount{{Effect: e, Objects: a.objects, Examples: a.examples}}}
	}
	withImpact := func(before int, imp *finding.Impact) {
		for i := before; i < len(p.Findings); i++ {
			p.Findings[i].Impact = imp
			p.Findings[i].Remedy = p.Findings[i].Remedy.WithObjects(imp)
		}
	}

	refusals := make([]refusalKey, 0, len(r.refusals))
	for k := range r.refusals {
		refusals = append(refusals, k)
	}
	sort.Slice(refusals, func(i, j int) bool {
		a, b := refusals[i], refusals[j]
		if a.from != b.from {
			return a.from < b.from
		}
		if a.to != b.to {
			return a.to < b.to
		}
		return !a.hop && b.hop
	})
	for _, k := range refusals {
		a := r.refusals[k]
		checks := make([]string, 0, len(a.checks))
		for ch := range a.checks {
			checks = append(checks, string(ch))
		}
		slices.Sort(checks)
		before := len(p.Findings)
		if k.hop {
			p.Add(finding.Draft{Version: k.from, PairVersion: k.to, Check: config.CheckConversionWebhook, Level: config.EnforcementStrict,
				Remedy: remedy, Fact: finding.Change{Kind: "nonStorageHopRefused", Old: k.from, New: k.to},
				Message: fmt.Sprintf("the new conversion webhook cannot convert from %s to %s (%s), two versions that are not the storage version, "+
					"while status.storedVersions holds %s: objects stored at %s are read at %s through this conversion, and every such read fails",
					k.from, k.to, strings.Join(checks, ", "), strings.Join(r.storedVersions, ", "), k.from, k.to)})
		} else {
			p.Add(finding.Draft{Version: k.from, PairVersion: k.to, Check: config.CheckConversionWebhook, Level: config.EnforcementStrict,
				Remedy: remedy, Fact: finding.Change{Kind: "refused", Old: k.from, New: k.to},
				Message: fmt.Sprintf("the new conversion webhook refuses to convert stored objects from %s to %s (%s): every read of them at %s fails, "+
					"and so does every LIST of the resource that holds them", k.from, k.to, strings.Join(checks, ", "), k.to)})
		}
		withImpact(before, impact(a, finding.EffectConversionRefused))
	}

	losses := make([]lossKey, 0, len(r.losses))
	for k := range r.losses {
		losses = append(losses, k)
	}
	sort.Slice(losses, func(i, j int) bool {
		if losses[i].version != losses[j].version {
			return losses[i].version < losses[j].version
		}
		return losses[i].path < losses[j].path
	})
	for _, k := range losses {
		a := r.losses[k]
		trips := make([]string, 0, len(a.trips))
		for t := range a.trips {
			trips = append(trips, t)
		}
		slices.Sort(trips)
		before := len(p.Findings)
		p.Add(finding.Draft{Version: k.version, Field: k.path, Check: config.CheckConversionWebhook, Level: config.EnforcementStrict,
			DataLoss: true, Remedy: remedy, Fact: finding.Change{Kind: "lost"},
			Message: fmt.Sprintf("the new conversion webhook loses this field on a round trip (%s): what stored objects hold here is absent "+
				"from every read that converts them, and lost on their next write", finding.SummarizeList(trips))})
		withImpact(before, impact(a, finding.EffectConversionLost))
	}

	versions := make([]string, 0, len(r.annotations))
	for v := range r.annotations {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	for _, v := range versions {
		a := r.annotations[v]
		before := len(p.Findings)
		p.CRDLevelWith(c.AnnotationEnforcement, v, config.CheckConversionWebhook, remedy, finding.Change{Kind: "annotationsNearLimit"},
			"annotations of stored objects at %s reach %d bytes of the apiserver's %d-byte limit through the new conversion "+
				"(stash annotations grow with each conversion): a write that takes them over the limit is refused", v, a.bytes, conversion.AnnotationLimit)
		withImpact(before, impact(a, finding.EffectAnnotationsNearLimit))
	}

	slices.SortFunc(r.batches, func(a, b conversion.BatchRefusal) int {
		return strings.Compare(a.To+"|"+string(a.Check), b.To+"|"+string(b.Check))
	})
	for _, b := range r.batches {
		p.CRDLevelWith(config.EnforcementStrict, b.To, config.CheckConversionWebhook, remedy, finding.Change{Kind: "batchRefused", New: b.To},
			"the new conversion webhook refuses a review of %d objects converted to %s at once (%s), while it converts each of them alone: "+
				"reads that convert several objects in one review fail", b.Objects, b.To, b.Check)
	}

	if r.cut != conversion.CutNone && r.cut != conversion.CutUnanswered {
		p.CRDLevelWith(config.EnforcementWarn, "", config.CheckConversionWebhook, &finding.Remedy{Action: finding.RemedyVerifyConversion},
			finding.Change{Kind: "cut"},
			"conversion probed for %d of %d stored %s: the budget (%s) cut it short; the others are not verified",
			r.probed, r.objects, plural.Noun(r.kind), r.budgetText())
	}
	return p.Findings
}

func (r *ConversionReader) budgetText() string {
	var parts []string
	if r.budget.MaxObjects > 0 {
		parts = append(parts, fmt.Sprintf("maxObjects %d", r.budget.MaxObjects))
	}
	if r.budget.Timeout > 0 {
		parts = append(parts, "timeout "+r.budget.Timeout.String())
	}
	if len(parts) == 0 {
		return string(r.cut)
	}
	return strings.Join(parts, ", ") + "; " + string(r.cut) + " reached"
}

var objectIndex = regexp.MustCompile(`\[[0-9]+\]`)

// conversionSchemaPath is the schema path of an object path of the probe
// (.spec.items[2].name -> ^.spec.items[*].name).
func conversionSchemaPath(p string) schemapath.Path {
	return schemapath.Path("^" + objectIndex.ReplaceAllString(p, "[*]"))
}
