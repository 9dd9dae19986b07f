package objects

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/internal/schemapath"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/internal/celcompat"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// The descriptor of existingResources: stored objects the new CRD rejects, prunes or defaults differently.
var _ = finding.Register(finding.Descriptor{IDs: []string{config.CheckExistingResources}, Runs: finding.RunsLive, Remedy: finding.RemedyFixObjects})

// ObjectReader reads the stored objects of one version of an updated CRD
// as the apiserver will read and write them under the new CRD, with the
// apiserver's own code: pruning (fields no longer declared, unknown fields
// no longer preserved), nulls dropped where no longer nullable, defaults
// applied, then the validation of a create (OpenAPI schema, metadata, list
// sets and maps, CEL rules) and, for an object that fails it, of an update
// that leaves it as it is (CRD validation ratcheting). What changes for each
// object is joined to the findings of the comparison at its field or above:
// each such finding gets its Impact (see ApplyImpacts). The comparison of
// the two reads is in impact_diff.go, the joining to findings in
// impact_join.go, error fields and schema paths in impact_paths.go.
//
// The baseline is the object as the old CRD reads it (pruned and defaulted
// under the old schema too, which changes nothing for an object the
// apiserver returns and keeps, for a sample, what the old CRD would drop
// from being counted as the update's doing), and as the old CRD judges it:
// an object the new CRD rejects is validated under the old CRD too, with
// the same strategy, and an error at a field the old CRD already rejects
// is not the update's doing (the object was refused there before and still
// is; validation ratcheting holds per field as before). Such an object gets
// a note (a warning-level existingResources finding, Object.AlreadyInvalid)
// rather than a rejection.
//
// Where the version has the status subresource, an error in status is not
// a rejection of the object: a create drops status and an update of the
// object keeps the stored one, so only writes of the status (its
// controller's) are refused (EffectStatusRejected), and a create is judged
// without status.
type ObjectReader struct {
	source, kind, version string
	newCRD                *apiextv1.CustomResourceDefinition
	oldS, newS            *structuralschema.Structural
	oldPrunes, newPrunes  bool // the CRD does not set spec.preserveUnknownFields
	// readChanges: reading under the new CRD may change an object the old
	// CRD has read (readsDiffer); when it cannot, objects listed from the
	// apiserver are only validated.
	readChanges bool
	// newView judges objects as the new CRD does, oldView as the old one
	// does (nil where the old CRD has no structural schema of the version).
	newView, oldView *crdView
	cfg              *config.Settings
	// validators, when set, keeps the validators of batches (UseValidators).
	validators *Validators
	// cel is the CEL semantics of the judged Kubernetes version (celSemantics).
	cel celcompat.Semantics

	findings []finding.Finding         // the pair's findings
	byField  map[schemapath.Path][]int // schema path -> indexes of findings of this version at it
	crdLevel []int                     // indexes of the findings about the whole CRD or version
	acc      map[int]*impactAcc
	objects  int // objects read
	affected int // objects with an effect
	residual *finding.Policy
	notes    *finding.Policy // objects already invalid under the old CRD
}

// objectValidator is the apiserver's custom resource strategy
// (k8s.io/apiextensions-apiserver/pkg/registry/customresource).
type objectValidator interface {
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// NewObjectReader returns the reader of the objects of version (which both
// CRDs have) of an updated CRD; findings are the findings of the
// comparison of the pair, source is SourceCluster or SourceSamples.
func NewObjectReader(oldCRD, newCRD *apiextv1.CustomResourceDefinition, version, source string,
	findings []finding.Finding, cfg *config.Settings) (r *ObjectReader, err error) {
	return NewObjectReaderFor(finding.NewPolicy(cfg, newCRD.Name), oldCRD, newCRD, version, source, findings)
}

// NewObjectReaderFor is NewObjectReader under the pair's policy p (of
// newCRD's name): the findings the reader makes are lists of p.
func NewObjectReaderFor(p *finding.Policy, oldCRD, newCRD *apiextv1.CustomResourceDefinition, version, source string,
	findings []finding.Finding) (r *ObjectReader, err error) {

	r = newReaderBase(p, newCRD, oldCRD.Spec.PreserveUnknownFields, version, source, findings)
	defer func() {
		if r != nil {
			r.readChanges = r.oldS == nil || r.oldPrunes != r.newPrunes || readsDiffer(r.oldS, r.newS)
		}
	}()
	nv := checks.VersionsByName(newCRD)[version]
	if nv == nil {
		return nil, fmt.Errorf("crd %s has no version %s", newCRD.Name, version)
	}
	newInternal, err := internalSchemaOf(checks.VersionSchema(nv))
	if err != nil {
		return nil, err
	}
	if r.newS, err = structuralschema.NewStructural(newInternal); err != nil {
		return nil, fmt.Errorf("crd %s version %s: structural schema: %w", newCRD.Name, version, err)
	}
	if ov := checks.VersionsByName(oldCRD)[version]; ov != nil && checks.VersionSchema(ov) != nil {
		oldInternal, err := internalSchemaOf(checks.VersionSchema(ov))
		if err != nil {
			return nil, err
		}
		// An old schema that is not structural prunes nothing the
		// apiserver would: the objects are taken as they are, and judged
		// by the new CRD alone.
		r.oldS, _ = structuralschema.NewStructural(oldInternal)
		if r.oldS != nil {
			if r.oldView, err = newCRDView(oldCRD, ov, oldInternal, r.oldS, r.cel); err != nil {
				return nil, err
			}
		}
	}
	if r.newView, err = newCRDView(newCRD, nv, newInternal, r.newS, r.cel); err != nil {
		return nil, err
	}
	return r, nil
}

// NoObjectsRead is the Result of NewObjectReader's reader for the same
// arguments that reads no object (a version without stored objects),
// without building what reading an object needs (the structural schemas
// and validators of both CRDs: most of the cost of a read of a large CRD's
// version that has no objects). It does not check that the new CRD's
// schema of version is structural: the apiserver refuses a CRD whose
// schema is not (apiserverRejects offline), and with no object to read
// nothing depends on it.
func NoObjectsRead(newCRD *apiextv1.CustomResourceDefinition, version, source string,
	findings []finding.Finding, cfg *config.Settings) (finding.VersionImpact, error) {

	return NoObjectsReadFor(finding.NewPolicy(cfg, newCRD.Name), newCRD, version, source, findings)
}

// NoObjectsReadFor is NoObjectsRead under the pair's policy p.
func NoObjectsReadFor(p *finding.Policy, newCRD *apiextv1.CustomResourceDefinition, version, source string,
	findings []finding.Finding) (finding.VersionImpact, error) {

	if checks.VersionsByName(newCRD)[version] == nil {
		return finding.VersionImpact{}, fmt.Errorf("crd %s has no version %s", newCRD.Name, version)
	}
	return newReaderBase(p, newCRD, false, version, source, findings).Result(), nil
}

// newReaderBase is an ObjectReader without its schemas: its findings
// indexed by field.
func newReaderBase(pol *finding.Policy, newCRD *apiextv1.CustomResourceDefinition, oldPreserves bool, version, source string,
	findings []finding.Finding) *ObjectReader {

	p := pol.Sub()
	r := &ObjectReader{source: source, kind: newCRD.Spec.Names.Kind, version: version, cfg: p.Settings, newCRD: newCRD,
		oldPrunes: !oldPreserves, newPrunes: !newCRD.Spec.PreserveUnknownFields,
		findings: findings, byField: map[schemapath.Path][]int{}, acc: map[int]*impactAcc{}, residual: p,
		notes: pol.Sub()}
	r.cel = celSemantics(r.cfg.KubeVersion)
	for i, f := range findings {
		switch {
		case f.Check == config.CheckExistingResources || f.Version != version && f.Version != "":
		case f.Field == "":
			r.crdLevel = append(r.crdLevel, i)
		default:
			// A finding inside a combinator branch is about the field the
			// branch constrains and the node that carries the combinator.
			base, stripped := f.Field.SplitCombinators()
			r.byField[stripped] = append(r.byField[stripped], i)
			if base != stripped {
				r.byField[base] = append(r.byField[base], i)
			}
		}
	}
	return r
}

// crdView is how one CRD (the old or the new) judges the objects of a
// version, with the apiserver's custom resource strategy.
type crdView struct {
	// build builds the strategy (validator) on first use: the whole
	// strategy, its CEL rules compiled, only when an object needs it (most
	// reads reject nothing).
	build     func() (objectValidator, error)
	mu        sync.Mutex // guards validator
	validator objectValidator
	// transitions are the version's CEL rules that use oldSelf, which a
	// create skips (nil: none): where there are any, every object is also
	// validated as an update, and their errors are told from the others
	// by validating them alone.
	transitions *transitionRules
	// status: the version has the status subresource.
	status bool
}

func newCRDView(crd *apiextv1.CustomResourceDefinition, v *apiextv1.CustomResourceDefinitionVersion,
	internal *apiextensions.JSONSchemaProps, s *structuralschema.Structural, sem celcompat.Semantics) (*crdView, error) {

	var subresources apiextensions.CustomResourceSubresources
	if v.Subresources != nil {
		if err := apiextv1.Convert_v1_CustomResourceSubresources_To_apiextensions_CustomResourceSubresources(v.Subresources, &subresources, nil); err != nil {
			return nil, fmt.Errorf("crd %s version %s: converting subresources: %w", crd.Name, v.Name, err)
		}
	}
	w := &crdView{transitions: newTransitionRules(s, sem), status: subresources.Status != nil}
	w.build = func() (objectValidator, error) {
		schemaValidator, _, err := validation.NewSchemaValidator(internal)
		if err != nil {
			return nil, fmt.Errorf("crd %s version %s: building schema validator: %w", crd.Name, v.Name, err)
		}
		gvk := runtimeschema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		strategy := customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(),
			crd.Spec.Scope == apiextv1.NamespaceScoped, gvk, schemaValidator, schemaValidator, s,
			subresources.Status, subresources.Scale, v.SelectableFields)
		if err := celcompat.UseInStrategy(strategy, sem); err != nil {
			return nil, fmt.Errorf("crd %s version %s: CEL rules at %s: %w", crd.Name, v.Name, sem, err)
		}
		return strategy, nil
	}
	return w, nil
}

func internalSchemaOf(s *apiextv1.JSONSchemaProps) (*apiextensions.JSONSchemaProps, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if s == nil {
		return internal, nil
	}
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema: %w", err)
	}
	return internal, nil
}

// Read reads a batch of objects of the reader's version. It keeps none of
// them and leaves them as they are.
//
// The validators of a batch are built from the parts of the new schema its
// objects reach (see reached_schema.go): real objects set a small
// part of a large schema, and the OpenAPI validator walks every property
// the schema declares.
//
// The objects are read and validated under the new CRD in parallel (at most
// GOMAXPROCS at once: the apiserver's validators are safe for concurrent
// use), then joined to the findings one by one, in order.
func (r *ObjectReader) Read(objs []map[string]any) {
	reads := make([]objectRead, len(objs))
	vals := make([]any, len(objs))
	inChunks(len(objs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			reads[i] = r.readObject(objs[i])
		}
	})
	for i := range reads {
		vals[i] = reads[i].next
	}
	v, err := r.validators.get(r.newCRD, r.version, vals, r.cel)
	if err != nil || v == nil {
		v = nil // the whole strategy instead (an invalid schema the apiserver would refuse anyway)
	}
	judgements := make([]judgement, len(reads))
	inChunks(len(reads), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			judgements[i] = r.newView.judge(reads[i].next, v)
		}
	})
	for i := range reads {
		r.account(&reads[i], judgements[i])
	}
}

// minChunk is the fewest objects a goroutine of inChunks handles.
const minChunk = 64

// inChunks calls fn with consecutive ranges [lo, hi) covering [0, n), in
// parallel: at most GOMAXPROCS ranges of at least minChunk. A panic of fn
// is raised again in the caller's goroutine (as a *parallel.PanicError,
// with fn's stack).
func inChunks(n int, fn func(lo, hi int)) {
	workers := min(goruntime.GOMAXPROCS(0), (n+minChunk-1)/minChunk)
	if workers <= 1 {
		fn(0, n)
		return
	}
	size := (n + workers - 1) / workers
	err := parallel.ForEach(context.Background(), workers, workers, func(_ context.Context, w int) error {
		fn(min(n, w*size), min(n, (w+1)*size))
		return nil
	})
	if err != nil {
		panic(err)
	}
}

// objectEffect is one effect on one object.
type objectEffect struct {
	effect     finding.Effect
	field      string          // concrete: spec.items[2].name
	schemaPath schemapath.Path // ^.spec.items[*].name
	// errType, detail: of a rejection, the apiserver's error type and
	// detail (ObjectEffect.Type and Detail).
	errType  field.ErrorType
	detail   string
	value    string // what the object holds (ObjectEffect.Value)
	required bool   // a rejection for a missing required field
	// noRatchet: a rejection that validation ratcheting does not lift (a
	// CEL transition rule: every update of the object is refused).
	noRatchet bool
}

// objectRead is one object read under the new CRD, not yet validated.
type objectRead struct {
	name    string
	base    map[string]any // as the old CRD reads it
	next    map[string]any // as the new CRD reads it
	effects []objectEffect // what changed on the read
}

// readObject reads one object under the new CRD and compares it with the
// object as the old CRD reads it: an object listed from the apiserver is
// that already (the apiserver prunes and defaults what it reads from
// etcd), a sample is read under the old CRD first.
func (r *ObjectReader) readObject(obj map[string]any) objectRead {
	if r.source == finding.SourceCluster && !r.readChanges {
		return objectRead{name: objectName(obj), base: obj, next: obj}
	}
	// A copy: the caller's object stays as it is, and typed nils (which
	// the apiserver's code does not expect) become untyped.
	next, _ := finding.DeepCopyJSON(obj).(map[string]any)
	base := obj
	if r.source != finding.SourceCluster && r.oldS != nil {
		base, _ = finding.DeepCopyJSON(next).(map[string]any)
		readAs(base, r.oldS, r.oldPrunes)
	}
	readAs(next, r.newS, r.newPrunes)
	read := objectRead{name: objectName(obj), base: base, next: next}
	d := differ{out: &read.effects, stored: r.source == finding.SourceCluster, samples: r.source != finding.SourceCluster}
	d.object(nil, schemapath.Root, base, next, obj, r.oldS, r.newS, true)
	return read
}

// account joins an object read under the new CRD, and j, its judgement
// by the new CRD, to the findings (validating it under the old CRD where
// the new one rejects it).
func (r *ObjectReader) account(read *objectRead, j judgement) {
	r.objects++
	name, effects := read.name, read.effects
	if len(j.errs)+len(j.updateOnly) > 0 && r.oldView != nil {
		// The baseline: the fields the old CRD already rejects.
		old := r.oldView.judge(read.base, nil)
		rejected := map[string]bool{}
		for _, list := range []field.ErrorList{old.errs, old.updateOnly} {
			for _, e := range list {
				rejected[ErrorField(e)] = true
			}
		}
		var persisting, persistingUpdates field.ErrorList
		j.errs, persisting = splitByField(j.errs, rejected)
		j.updateOnly, persistingUpdates = splitByField(j.updateOnly, rejected)
		r.addNote(name, append(persisting, persistingUpdates...))
	}
	addRejected := func(list field.ErrorList, noRatchet bool) {
		for _, e := range list {
			if skippedRules(e) {
				continue // the CEL rules skipped for the other errors: not an effect of its own
			}
			f := ErrorField(e)
			effect := finding.EffectRejected
			if r.newView.status && inStatus(f, e.Type) {
				effect = finding.EffectStatusRejected
			}
			effects = append(effects, objectEffect{effect: effect, field: f,
				schemaPath: schemaPathOf(r.newS, f), errType: e.Type, detail: finding.BoundText(e.Detail, 200),
				value: finding.BoundText(badValueText(e), 200), required: e.Type == field.ErrorTypeRequired, noRatchet: noRatchet})
		}
	}
	addRejected(j.errs, false)
	addRejected(j.updateOnly, true)
	ratchets := j.ratchets
	if len(effects) == 0 {
		return
	}
	r.affected++
	sort.SliceStable(effects, func(i, j int) bool { return effects[i].field < effects[j].field })
	var residual []objectEffect
	// The findings the object's pruned or defaulted fields are joined to:
	// a rejection no finding explains is their consequence (a parent's
	// minProperties that a pruned field no longer meets).
	var readFindings []int
	for _, e := range effects {
		if !e.effect.Rejects() {
			readFindings = append(readFindings, r.attribute(e)...)
		}
	}
	for _, e := range effects {
		idxs := r.attribute(e)
		if len(idxs) == 0 && e.effect.Rejects() {
			idxs = slices.Compact(slices.Sorted(slices.Values(readFindings)))
		}
		if len(idxs) == 0 {
			residual = append(residual, e)
			continue
		}
		for _, i := range idxs {
			acc := r.acc[i]
			if acc == nil {
				acc = &impactAcc{}
				r.acc[i] = acc
			}
			acc.add(r.objects, name, e, ratchets && !e.noRatchet)
		}
	}
	r.addResidual(name, residual, ratchets)
}

// judgement is what one CRD's validation says of an object.
type judgement struct {
	// errs: the errors of a create (judged without status where the
	// version has the status subresource, which a create drops) and, in
	// status, of the object as it is.
	errs field.ErrorList
	// updateOnly: the errors of an update that leaves the object as it
	// is which a create does not give: those of transition rules.
	updateOnly field.ErrorList
	// ratchets: errs ratchet (an update that leaves the object alone
	// gives no error but those of transition rules).
	ratchets bool
}

// judge validates obj as the view's CRD does (with v, the batch's
// validators, or the apiserver's whole strategy when v is nil).
func (w *crdView) judge(obj map[string]any, v *versionValidator) judgement {
	validate := func(o map[string]any) field.ErrorList {
		if v != nil {
			return v.validate(o)
		}
		return w.strategy().Validate(context.Background(), &unstructured.Unstructured{Object: o})
	}
	errs := validate(obj)
	if _, ok := obj["status"]; ok && w.status && anyInStatus(errs) {
		// A create drops status (the strategy's PrepareForCreate): the
		// object's own verdict is without it, which also runs the CEL
		// rules that status errors kept from running. The errors in
		// status stay, for writes of the status.
		withoutStatus := maps.Clone(obj)
		delete(withoutStatus, "status")
		inStatusErrs := slices.DeleteFunc(slices.Clone(errs), func(e *field.Error) bool { return !inStatus(ErrorField(e), e.Type) })
		errs = append(validate(withoutStatus), inStatusErrs...)
	}
	// An update that leaves the object as it is, as the apiserver's
	// strategy validates it (an update needs a resourceVersion, which
	// samples lack): where the create fails, it tells whether validation
	// ratcheting lets the object be updated; where the version has CEL
	// transition rules (oldSelf), which a create skips and ratcheting never
	// covers, it finds the objects every update of which those rules refuse.
	var upd field.ErrorList
	if len(errs) > 0 || w.transitions != nil {
		u := &unstructured.Unstructured{Object: obj}
		if u.GetResourceVersion() == "" {
			u.SetResourceVersion("1")
		}
		upd = w.strategy().ValidateUpdate(context.Background(), u, u)
	}
	// The errors of an update that a create does not give: those of
	// transition rules, found by validating those rules alone (less those
	// a create gives too: a rule with optionalOldSelf runs on a create).
	var updateOnly, transitionErrs field.ErrorList
	if w.transitions != nil {
		transitionErrs = w.transitions.validate(obj, true)
		updateOnly = transitionErrs
		if w.transitions.onCreate && len(updateOnly) > 0 {
			updateOnly = withoutErrorsAt(updateOnly, w.transitions.validate(obj, false))
		}
	}
	// The create's errors ratchet when an update that leaves the object
	// alone gives no error but those of transition rules (the rules'
	// own findings).
	return judgement{errs: errs, updateOnly: updateOnly, ratchets: len(errs) > 0 && len(upd) <= len(transitionErrs)}
}

// errorAt identifies a validation error by its type and field (and its
// origin, where the validator names one): what two validations of one
// object by the same rules share for the same failure.
type errorAt struct {
	t      field.ErrorType
	field  string
	origin string
}

// withoutErrorsAt returns errs less one error for each of others at the
// same errorAt.
func withoutErrorsAt(errs, others field.ErrorList) field.ErrorList {
	count := map[errorAt]int{}
	for _, e := range others {
		count[errorAt{e.Type, e.Field, e.Origin}]++
	}
	var out field.ErrorList
	for _, e := range errs {
		if k := (errorAt{e.Type, e.Field, e.Origin}); count[k] > 0 {
			count[k]--
			continue
		}
		out = append(out, e)
	}
	return out
}

// inStatus tells whether the error of type t at the field f is about the
// object's status: below status, or status itself (but not a status
// required at the root, which a create that drops status fails).
func inStatus(f string, t field.ErrorType) bool {
	return strings.HasPrefix(f, "status.") || strings.HasPrefix(f, "status[") || f == "status" && t != field.ErrorTypeRequired
}

func anyInStatus(errs field.ErrorList) bool {
	return slices.ContainsFunc(errs, func(e *field.Error) bool { return inStatus(ErrorField(e), e.Type) })
}

// skippedRules tells whether an error is the apiserver's note that CEL
// rules were skipped for the other errors: not an error of its own. The
// strategy makes it as field.Invalid(nil, nil, ...): the one error of no
// field with no value (TestSkippedRulesIsTheStrategysNote).
func skippedRules(e *field.Error) bool {
	return e.Type == field.ErrorTypeInvalid && e.Field == nilFieldPath && e.BadValue == nil
}

// nilFieldPath is the Field of an error made with a nil *field.Path.
var nilFieldPath = (*field.Path)(nil).String()

// splitByField splits errs into those at a field not in fields and those
// at one in it.
func splitByField(errs field.ErrorList, fields map[string]bool) (out, in field.ErrorList) {
	for _, e := range errs {
		if fields[ErrorField(e)] {
			in = append(in, e)
		} else {
			out = append(out, e)
		}
	}
	return out, in
}

// strategy is the apiserver's custom resource strategy of the version,
// built on first use. A schema it cannot build a validator of (which the
// apiserver would have refused) validates nothing.
func (w *crdView) strategy() objectValidator {
	w.mu.Lock() // objects are judged in parallel
	defer w.mu.Unlock()
	if w.validator == nil {
		v, err := w.build()
		if err != nil {
			v = noValidator{}
		}
		w.validator = v
	}
	return w.validator
}

type noValidator struct{}

func (noValidator) Validate(context.Context, runtime.Object) field.ErrorList { return nil }

func (noValidator) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

// readAs does to obj what the apiserver does to an object it reads or
// writes under the structural schema s: prune (unless the CRD sets
// spec.preserveUnknownFields), drop nulls that are not allowed, apply
// defaults.
func readAs(obj map[string]any, s *structuralschema.Structural, prune bool) {
	if prune {
		structuralpruning.Prune(obj, s, true)
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s)
	structuraldefaulting.Default(obj, s)
}

// addResidual reports effects that no finding explains as existingResources
// findings, one per object and effect (there should be none: an object
// invalid before the update, or a gap of the comparison).
func (r *ObjectReader) addResidual(name string, effects []objectEffect, ratchets bool) {
	if len(effects) == 0 || !r.cfg.Checks.CRD.ExistingResources.Enabled {
		return
	}
	byEffect := map[finding.Effect][]finding.ObjectEffect{}
	noRatchet := map[finding.Effect]bool{}
	for _, e := range effects {
		byEffect[e.effect] = append(byEffect[e.effect], e.public(name))
		noRatchet[e.effect] = noRatchet[e.effect] || e.noRatchet
	}
	for _, effect := range finding.EffectOrder {
		list := sortedEffects(byEffect[effect])
		if len(list) == 0 {
			continue
		}
		of := &finding.ObjectFinding{Source: r.source, Kind: r.kind, Name: name, Effect: effect,
			Fields: list[:min(len(list), finding.MaxExamples)], MoreFields: max(len(list)-finding.MaxExamples, 0),
			Ratchets: effect.Rejects() && ratchets && !noRatchet[effect] && r.source == finding.SourceCluster}
		r.residual.Add(finding.Draft{Version: r.version, Check: config.CheckExistingResources, Level: config.EnforcementStrict, Object: of,
			DataLoss: effect == finding.EffectPruned, Remedy: &finding.Remedy{Action: finding.RemedyFixObjects, Version: r.version, Objects: []string{name}}})
	}
}

// addNote reports an object that the old CRD already rejects at the fields
// of errs, which the new CRD rejects too: a note (a warning-level
// existingResources finding), not an effect of the update.
func (r *ObjectReader) addNote(name string, errs field.ErrorList) {
	if len(errs) == 0 || !r.cfg.Checks.CRD.ExistingResources.Enabled {
		return
	}
	var list []finding.ObjectEffect
	for _, e := range errs {
		if skippedRules(e) {
			continue
		}
		f := ErrorField(e)
		list = append(list, objectEffect{effect: finding.EffectRejected, field: f, schemaPath: schemaPathOf(r.newS, f),
			errType: e.Type, detail: finding.BoundText(e.Detail, 200), value: finding.BoundText(badValueText(e), 200)}.public(name))
	}
	list = sortedEffects(list)
	if len(list) == 0 {
		return
	}
	r.notes.Add(finding.Draft{Version: r.version, Check: config.CheckExistingResources, Level: config.EnforcementWarn,
		Remedy: &finding.Remedy{Action: finding.RemedyFixObjects, Version: r.version, Objects: []string{name}},
		Object: &finding.ObjectFinding{Source: r.source, Kind: r.kind, Name: name,
			Effect: finding.EffectRejected, AlreadyInvalid: true,
			Fields: list[:min(len(list), finding.MaxExamples)], MoreFields: max(len(list)-finding.MaxExamples, 0)}})
}

// public is the effect as findings carry it, on the object name.
func (e objectEffect) public(name string) finding.ObjectEffect {
	out := finding.ObjectEffect{Object: name, Field: e.field, Value: e.value, SchemaPath: e.schemaPath}
	if e.effect.Rejects() {
		out.Type, out.Detail = e.errType.String(), e.detail
	}
	return out
}

// sortedEffects sorts the effects of one object by field, type, value and
// detail, and drops repeats of an effect at the same field, of the same
// type and value (one line per failure).
func sortedEffects(list []finding.ObjectEffect) []finding.ObjectEffect {
	slices.SortFunc(list, func(a, b finding.ObjectEffect) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.Type, b.Type),
			strings.Compare(a.Value, b.Value), strings.Compare(a.Detail, b.Detail))
	})
	return slices.CompactFunc(list, func(a, b finding.ObjectEffect) bool {
		return a.Field == b.Field && a.Type == b.Type && a.Value == b.Value
	})
}

// badValueText is the value a validation error refuses, as the apiserver
// prints it in the error (field.Error.ErrorBody: a string quoted, a
// number or bool as it is, anything else as JSON), "" where the error
// prints none (required, forbidden, too long, an omitted value). It is
// stored data: outputs a reader may not trust leave it out
// (Finding.WithoutStoredValues).
func badValueText(e *field.Error) string {
	switch e.Type {
	case field.ErrorTypeInvalid, field.ErrorTypeTypeInvalid, field.ErrorTypeNotSupported,
		field.ErrorTypeNotFound, field.ErrorTypeDuplicate, field.ErrorTypeTooMany, field.ErrorTypeTooFew:
	default:
		return ""
	}
	switch v := e.BadValue.(type) {
	case field.OmitValueType:
		return ""
	case int64, int32, float64, float32, bool:
		return fmt.Sprintf("%v", v)
	case string:
		return strconv.Quote(v)
	}
	if b, err := json.Marshal(e.BadValue); err == nil {
		return string(b)
	}
	if s, ok := e.BadValue.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%#v", e.BadValue)
}

// transitionRules are the CEL rules of a version that refer to oldSelf
// (transition rules), which a create skips and validation ratcheting
// never lifts, validated alone: their errors are the errors of an update
// that a create does not give, told from the others by where they come
// from rather than by their words.
type transitionRules struct {
	s *structuralschema.Structural // the version's schema with only those rules
	// onCreate: some of them run on a create too (optionalOldSelf).
	onCreate bool
	sem      celcompat.Semantics // the CEL semantics the rules run with
	once     sync.Once
	v        *cel.Validator
}

// newTransitionRules returns the transition rules of s, nil when it has
// none. A rule that only mentions the word (in a string) is validated as
// the apiserver validates it (ratcheted when it does not use oldSelf).
func newTransitionRules(s *structuralschema.Structural, sem celcompat.Semantics) *transitionRules {
	if s == nil || !hasTransitionRules(s) {
		return nil
	}
	c := s.DeepCopy()
	t := &transitionRules{s: c, sem: sem}
	keepTransitionRules(c, &t.onCreate)
	return t
}

func isTransitionRule(r apiextv1.ValidationRule) bool { return strings.Contains(r.Rule, "oldSelf") }

func hasTransitionRules(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if slices.ContainsFunc(s.XValidations, isTransitionRule) {
		return true
	}
	for _, p := range s.Properties {
		if hasTransitionRules(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasTransitionRules(s.AdditionalProperties.Structural) {
		return true
	}
	return hasTransitionRules(s.Items)
}

// keepTransitionRules drops every CEL rule of s but the transition rules,
// at every level; onCreate is set when one of them has optionalOldSelf.
func keepTransitionRules(s *structuralschema.Structural, onCreate *bool) {
	if s == nil {
		return
	}
	s.XValidations = slices.DeleteFunc(s.XValidations, func(r apiextv1.ValidationRule) bool { return !isTransitionRule(r) })
	for _, r := range s.XValidations {
		if r.OptionalOldSelf != nil && *r.OptionalOldSelf {
			*onCreate = true
		}
	}
	if len(s.XValidations) == 0 {
		s.XValidations = nil
	}
	for name, p := range s.Properties {
		keepTransitionRules(&p, onCreate)
		s.Properties[name] = p
	}
	if s.AdditionalProperties != nil {
		keepTransitionRules(s.AdditionalProperties.Structural, onCreate)
	}
	keepTransitionRules(s.Items, onCreate)
}

// validate validates obj with the transition rules alone: as an update
// that leaves it as it is (with validation ratcheting, as the apiserver's
// strategy), or as a create.
func (t *transitionRules) validate(obj map[string]any, update bool) field.ErrorList {
	t.once.Do(func() {
		t.v = cel.NewValidator(t.s, true, celconfig.PerCallLimit)
		if celcompat.Use(t.v, t.sem) != nil {
			t.v = nil // a library shaped otherwise (TestUseFindsTheActivationFactory fails first)
		}
	})
	if t.v == nil {
		return nil
	}
	var old any
	var opts []cel.Option
	if update {
		old = obj
		opts = append(opts, cel.WithRatcheting(common.NewCorrelatedObject(obj, obj, &model.Structural{Structural: t.s})))
	}
	errs, _ := t.v.Validate(context.Background(), nil, t.s, obj, old, celconfig.RuntimeCELCostBudget, opts...)
	return errs
}

// Result is the impact of the objects read so far.
func (r *ObjectReader) Result() finding.VersionImpact {
	v := finding.VersionImpact{Version: r.version, Source: r.source, Kind: r.kind, Read: r.objects,
		Affected: r.affected, Impacts: map[string]*finding.Impact{}, Residual: r.residual.Findings, Notes: r.notes.Findings}
	for i, acc := range r.acc {
		imp := &finding.Impact{Source: r.source, Kind: r.kind, Objects: r.objects, Affected: acc.affected,
			Ratcheted: acc.ratcheted, StatusRatcheted: acc.statusRatcheted, UpdatesRefused: acc.updatesRefused}
		for _, effect := range finding.EffectOrder {
			if ea := acc.effects[effect]; ea != nil {
				imp.Effects = append(imp.Effects, finding.EffectCount{Effect: effect, Objects: ea.objects, Examples: ea.examples})
			}
		}
		v.Impacts[r.findings[i].Key()] = imp
	}
	return v
}

// VersionsToRead returns the versions at which the stored objects of an
// updated CRD must be read to see what the update does to them: the
// versions the old CRD serves and the new one still has, whose schema
// changed in more than documentation. Reading at any other version would
// only cost conversions (through the CRD's conversion webhook, if it has
// one) without showing anything: validation, pruning and defaulting of
// those versions stay as they are.
func VersionsToRead(oldCRD, newCRD *apiextv1.CustomResourceDefinition) []string {
	newVersions := checks.VersionsByName(newCRD)
	var out []string
	for i := range oldCRD.Spec.Versions {
		ov := &oldCRD.Spec.Versions[i]
		nv, ok := newVersions[ov.Name]
		if !ov.Served || !ok {
			continue
		}
		if !checks.SameSchema(checks.VersionSchema(ov), checks.VersionSchema(nv)) {
			out = append(out, ov.Name)
		}
	}
	return out
}

// Unreadable is the existingResources finding for a version of a CRD whose
// stored objects could not be read through its conversion webhook (webhook
// names it, err says why): what the update does to them is unknown. The
// failMode decides, as for any live check that cannot run: an error under
// closed, a warning under open.
func Unreadable(crdName, version, webhook string, err error, cfg *config.Settings) []finding.Finding {
	p := finding.NewPolicy(cfg, crdName)
	return p.Judged(UnreadableFor(p, version, webhook, err))
}

// UnreadableFor is Unreadable under the pair's policy (a list of its own),
// before it is judged (finding.Policy.Apply judges it with the pair's).
func UnreadableFor(pol *finding.Policy, version, webhook string, err error) []finding.Finding {
	p := pol.Sub()
	fail := p.Settings.FailDecisionFor(config.FailUnreadableObjects, nil)
	p.CRDLevel(fail.Decision.Enforcement(), version, config.CheckExistingResources, finding.Change{Kind: "unreadable", New: webhook},
		"stored objects could not be read at version %s through the conversion webhook (%s), so what the update does to them is unknown (failMode %s)",
		version, webhook, fail.Mode)
	for i := range p.Findings {
		p.Findings[i].ReadError = finding.BoundText(err.Error(), finding.MaxMessageBytes)
	}
	return p.Findings
}

// Shortcut reports whether r only validates the objects it reads: its old
// and new schemas read a stored object alike (readsDiffer false), so
// nothing is pruned or defaulted differently. FullRead turns the shortcut
// off; the engine's proofs (proof_test.go) check that both find the same.
func (r *ObjectReader) Shortcut() bool { return !r.readChanges }

// FullRead makes r read every object as if its schemas read them apart.
func (r *ObjectReader) FullRead() { r.readChanges = true }
