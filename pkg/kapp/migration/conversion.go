package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/conversion"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ErrConversionUnsafe: the conversion webhook of a CRD to migrate refuses
// stored objects or loses their fields on the way to the storage version
// (or could not be asked): a rewrite would store the loss, so nothing is
// rewritten. Wrapped by *ConversionError.
var ErrConversionUnsafe = errors.New("the conversion webhook is not safe for the stored objects")

// ConversionError is the conversion probe's verdict on the CRDs of a
// migration, before any object is rewritten: the error findings of each
// CRD (check conversionWebhook), as facts.
type ConversionError struct {
	// Findings are the error findings, by CRD in the order of the run.
	Findings []finding.Finding
}

func (e *ConversionError) Error() string {
	var crds []string
	lines := make([]string, 0, len(e.Findings))
	for _, f := range e.Findings {
		if !slices.Contains(crds, f.CRD) {
			crds = append(crds, f.CRD)
		}
		lines = append(lines, "  "+findingLine(f))
	}
	return fmt.Sprintf("%v: nothing rewritten: the conversion webhook of %s, through which every object is rewritten at its storage version:\n%s",
		ErrConversionUnsafe, strings.Join(crds, ", "), strings.Join(lines, "\n"))
}

func (e *ConversionError) Unwrap() error { return ErrConversionUnsafe }

// findingLine is a finding of the probe in one line, from its facts:
// where, what, and the objects it names (the command prints the whole
// findings as every output words them: crd_migrate_storage.go).
func findingLine(f finding.Finding) string {
	where := "crd " + f.CRD
	if f.Version != "" {
		where += " version " + f.Version
		if f.PairVersion != "" {
			where += " -> " + f.PairVersion
		}
	}
	if f.Field != "" {
		where += " field " + f.Field.String()
	}
	what := f.Change.Kind
	switch f.Change.Kind {
	case "lost":
		what = "data loss: lost on a round trip"
	case "refused", "nonStorageHopRefused", "batchRefused":
		what = "refused"
	case "unverified":
		what = "conversion not verified: " + f.ReadError
	}
	line := where + ": [" + f.Check + "] " + what
	if f.Impact != nil {
		var names []string
		for _, e := range f.Impact.Effects {
			for _, ex := range e.Examples {
				names = append(names, ex.Object)
			}
		}
		if len(names) > 0 {
			line += fmt.Sprintf(": %d of %d objects: %s", f.Impact.Affected, f.Impact.Objects, strings.Join(names, ", "))
			if more := f.Impact.Affected - len(names); more > 0 {
				line += fmt.Sprintf(" and %d more", more)
			}
		}
	}
	return line
}

// probeConversions sends the stored objects of every pending CRD that
// converts through a webhook through it, as the rewrite will read them
// (conversion.Probe), and returns a *ConversionError when it would lose or
// refuse any: the migration then writes nothing. The objects are listed at
// the first version of status.storedVersions that is not the storage
// version (the one the migration moves them from).
func probeConversions(ctx context.Context, cluster Cluster, plans []*Plan, pageSize int64) error {
	var errs []finding.Finding
	for _, p := range plans {
		if !p.Pending() || p.Done() {
			continue
		}
		fs, err := probeConversion(ctx, cluster, p, pageSize)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.Severity == finding.SeverityError {
				errs = append(errs, f)
			}
		}
	}
	if len(errs) > 0 {
		return &ConversionError{Findings: errs}
	}
	return nil
}

func probeConversion(ctx context.Context, cluster Cluster, p *Plan, pageSize int64) ([]finding.Finding, error) {
	from := ""
	for _, v := range p.Stored {
		if v != p.Storage {
			from = v
			break
		}
	}
	if from == "" {
		return nil, nil
	}
	u, err := cluster.GetCRD(ctx, p.Name)
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s for its conversion webhook: %w", p.Name, err)
	}
	crd := &apiextv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", p.Name, err)
	}
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextv1.WebhookConverter {
		return nil, nil
	}
	ep, err := conversion.EndpointFor(crd)
	if errors.Is(err, conversion.ErrNoWebhook) {
		return nil, nil // no client config: nothing the probe can call
	}
	reader := crdupgradesafety.NewConversionReader(crd, webhookName(ep), finding.SourceCluster, crdupgradesafety.ConversionBudget{})
	opts := conversion.Options{StoredVersions: p.Stored}
	switch {
	case err != nil:
		reader.Unverified(err.Error())
		return judgeProbe(ctx, crd, reader)
	case ep.Service != nil:
		poster, err := cluster.ServiceProxy(ctx, ep.Service.Namespace, ep.Service.Name, ep.Service.Port, ep.Service.Path)
		if err != nil {
			reader.Unverified(err.Error())
			return judgeProbe(ctx, crd, reader)
		}
		opts.Transport = poster
	default:
		tr, err := ep.Transport()
		if err != nil {
			reader.Unverified(err.Error())
			return judgeProbe(ctx, crd, reader)
		}
		opts.Transport = tr
	}
	client := cluster.Objects(schema.GroupVersionResource{Group: p.Group, Version: from, Resource: p.Plural})
	cont := ""
	for {
		list, err := client.List(ctx, metav1.ListOptions{Limit: pageSize, Continue: cont})
		if err != nil {
			reader.Unverified(fmt.Sprintf("listing the stored objects at %s failed: %v", from, err))
			break
		}
		page := make([]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			page[i] = &list.Items[i]
		}
		rep, err := conversion.Probe(ctx, crd, page, opts)
		if err != nil {
			return nil, fmt.Errorf("probing the conversion webhook of CRD %s: %w", p.Name, err)
		}
		reader.Add(rep)
		if rep.Unverified() {
			break
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	return judgeProbe(ctx, crd, reader)
}

// judgeProbe judges what the probe of crd's conversion webhook gathered in
// the engine's one call of the CRD as it stands (nothing compared, no
// other view run): the conversionWebhook findings, judged under the
// defaults.
func judgeProbe(ctx context.Context, crd *apiextv1.CustomResourceDefinition, reader *crdupgradesafety.ConversionReader) ([]finding.Finding, error) {
	return crdupgradesafety.Judge(ctx, crdupgradesafety.Pair{Old: crd, New: crd, Compared: true, Conversion: probed{reader}}, nil, nil)
}

// probed is a probe the migration ran, as the engine's one call takes it
// (crdupgradesafety.ConversionProber).
type probed struct {
	reader *crdupgradesafety.ConversionReader
}

func (p probed) Probe(context.Context) (crdupgradesafety.ConversionResult, error) {
	return p.reader, nil
}

// webhookName names the webhook of ep as findings do: "service ns/name"
// or "url ...".
func webhookName(ep conversion.Endpoint) string {
	if ep.Service != nil {
		return "service " + ep.Service.Namespace + "/" + ep.Service.Name
	}
	return "url " + ep.URL
}
