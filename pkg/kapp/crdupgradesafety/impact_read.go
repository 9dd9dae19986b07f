package crdupgradesafety

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ObjectReader reads the stored objects of one version of an updated CRD
// as the apiserver will read and write them under the new CRD, with the
// apiserver's own code: pruning (fields no longer declared, unknown fields
// no longer preserved), nulls dropped where no longer nullable, defaults
// applied, then the validation of a create (OpenAPI schema, metadata, list
// sets and maps, CEL rules) and, for an object that fails it, of an update
// that leaves it as it is (CRD validation ratcheting). What changes for each
// object is joined to the findings of the comparison at its field or above:
// each such finding gets its Impact (see ApplyImpacts).
//
// The baseline is the object as the old CRD reads it (pruned and defaulted
// under the old schema too, which changes nothing for an object the
// apiserver returns and keeps, for a sample, what the old CRD would drop
// from being counted as the update's doing).
type ObjectReader struct {
	source, kind, version string
	newCRD                *apiextv1.CustomResourceDefinition
	oldS, newS            *structuralschema.Structural
	oldPrunes, newPrunes  bool // the CRD does not set spec.preserveUnknownFields
	// readChanges: reading under the new CRD may change an object the old
	// CRD has read (readsDiffer); when it cannot, objects listed from the
	// apiserver are only validated.
	readChanges bool
	// strategy builds the apiserver's custom resource strategy of the
	// version (validator), on first use.
	strategy  func() (objectValidator, error)
	validator objectValidator
	cfg       *config.Settings

	findings []Finding        // the pair's findings
	byField  map[string][]int // schema path -> indexes of findings of this version at it
	crdLevel []int            // indexes of the findings about the whole CRD or version
	acc      map[int]*impactAcc
	objects  int // objects read
	affected int // objects with an effect
	residual *policy
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
	findings []Finding, cfg *config.Settings) (r *ObjectReader, err error) {

	p := newPolicy(cfg, newCRD.Name)
	r = &ObjectReader{source: source, kind: newCRD.Spec.Names.Kind, version: version, cfg: p.cfg, newCRD: newCRD,
		oldPrunes: !oldCRD.Spec.PreserveUnknownFields, newPrunes: !newCRD.Spec.PreserveUnknownFields,
		findings: findings, byField: map[string][]int{}, acc: map[int]*impactAcc{}, residual: p}
	for i, f := range findings {
		switch {
		case f.Check == config.CheckExistingResources || f.Version != version && f.Version != "":
		case f.Field == "":
			r.crdLevel = append(r.crdLevel, i)
		default:
			// A finding inside a combinator branch is about the field the
			// branch constrains and the node that carries the combinator.
			base, stripped := splitCombinators(f.Field)
			r.byField[stripped] = append(r.byField[stripped], i)
			if base != stripped {
				r.byField[base] = append(r.byField[base], i)
			}
		}
	}
	defer func() {
		if r != nil {
			r.readChanges = r.oldS == nil || r.oldPrunes != r.newPrunes || readsDiffer(r.oldS, r.newS)
		}
	}()
	nv := versionsByName(newCRD)[version]
	if nv == nil {
		return nil, fmt.Errorf("crd %s has no version %s", newCRD.Name, version)
	}
	newInternal, err := internalSchemaOf(versionSchema(nv))
	if err != nil {
		return nil, err
	}
	if r.newS, err = structuralschema.NewStructural(newInternal); err != nil {
		return nil, fmt.Errorf("crd %s version %s: structural schema: %w", newCRD.Name, version, err)
	}
	if ov := versionsByName(oldCRD)[version]; ov != nil && versionSchema(ov) != nil {
		oldInternal, err := internalSchemaOf(versionSchema(ov))
		if err != nil {
			return nil, err
		}
		// An old schema that is not structural prunes nothing the
		// apiserver would: the objects are taken as they are.
		r.oldS, _ = structuralschema.NewStructural(oldInternal)
	}
	var subresources apiextensions.CustomResourceSubresources
	if nv.Subresources != nil {
		if err := apiextv1.Convert_v1_CustomResourceSubresources_To_apiextensions_CustomResourceSubresources(nv.Subresources, &subresources, nil); err != nil {
			return nil, fmt.Errorf("crd %s version %s: converting subresources: %w", newCRD.Name, version, err)
		}
	}
	// The apiserver's whole strategy (its CEL rules compiled) only when an
	// object needs it: most reads reject nothing.
	r.strategy = func() (objectValidator, error) {
		schemaValidator, _, err := validation.NewSchemaValidator(newInternal)
		if err != nil {
			return nil, fmt.Errorf("crd %s version %s: building schema validator: %w", newCRD.Name, version, err)
		}
		gvk := runtimeschema.GroupVersionKind{Group: newCRD.Spec.Group, Version: version, Kind: newCRD.Spec.Names.Kind}
		return customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(),
			newCRD.Spec.Scope == apiextv1.NamespaceScoped, gvk, schemaValidator, schemaValidator, r.newS,
			subresources.Status, subresources.Scale, nv.SelectableFields), nil
	}
	return r, nil
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
// objects reach (see check_existing_schema.go): real objects set a small
// part of a large schema, and the OpenAPI validator walks every property
// the schema declares.
func (r *ObjectReader) Read(objs []map[string]any) {
	reads := make([]objectRead, len(objs))
	vals := make([]any, len(objs))
	for i, obj := range objs {
		reads[i] = r.readObject(obj)
		vals[i] = reads[i].next
	}
	v, err := newVersionValidator(r.newCRD, r.version, vals, true)
	if err != nil || v == nil {
		v = nil // the whole strategy instead (an invalid schema the apiserver would refuse anyway)
	}
	for i := range reads {
		r.judge(&reads[i], v)
	}
}

// objectEffect is one effect on one object.
type objectEffect struct {
	effect     Effect
	field      string // concrete: spec.items[2].name
	schemaPath string // ^.spec.items[*].name
	value      string
	required   bool // a rejection for a missing required field
}

// objectRead is one object read under the new CRD, not yet validated.
type objectRead struct {
	name    string
	next    map[string]any // as the new CRD reads it
	effects []objectEffect // what changed on the read
}

// readObject reads one object under the new CRD and compares it with the
// object as the old CRD reads it: an object listed from the apiserver is
// that already (the apiserver prunes and defaults what it reads from
// etcd), a sample is read under the old CRD first.
func (r *ObjectReader) readObject(obj map[string]any) objectRead {
	if r.source == SourceCluster && !r.readChanges {
		return objectRead{name: objectName(obj), next: obj}
	}
	// A copy: the caller's object stays as it is, and typed nils (which
	// the apiserver's code does not expect) become untyped.
	next, _ := deepCopyJSON(obj).(map[string]any)
	base := obj
	if r.source != SourceCluster && r.oldS != nil {
		base, _ = deepCopyJSON(next).(map[string]any)
		readAs(base, r.oldS, r.oldPrunes)
	}
	readAs(next, r.newS, r.newPrunes)
	read := objectRead{name: objectName(obj), next: next}
	d := differ{out: &read.effects, stored: r.source == SourceCluster}
	d.object(nil, "^", base, next, r.oldS, r.newS, true)
	return read
}

// judge validates an object read under the new CRD (with v, the batch's
// validators, or the apiserver's whole strategy when v is nil) and joins
// its effects to the findings.
func (r *ObjectReader) judge(read *objectRead, v *versionValidator) {
	r.objects++
	name, effects := read.name, read.effects
	u := &unstructured.Unstructured{Object: read.next}
	var errs field.ErrorList
	if v != nil {
		errs = v.validate(read.next)
	} else {
		errs = r.strategyValidator().Validate(context.Background(), u)
	}
	ratchets := false
	if len(errs) > 0 {
		// An update that leaves the object as it is, as the apiserver's
		// strategy validates it (an update needs a resourceVersion, which
		// samples lack).
		if u.GetResourceVersion() == "" {
			u.SetResourceVersion("1")
		}
		ratchets = len(r.strategyValidator().ValidateUpdate(context.Background(), u, u)) == 0
		for _, e := range errs {
			if e.Type == field.ErrorTypeInvalid && strings.HasPrefix(e.Detail, "some validation rules were not checked") {
				continue // the CEL rules skipped for the other errors: not an effect of its own
			}
			f := errorField(e)
			effects = append(effects, objectEffect{effect: EffectRejected, field: f,
				schemaPath: schemaPathOf(r.newS, f), value: boundText(e.ErrorBody(), 200),
				required: e.Type == field.ErrorTypeRequired})
		}
	}
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
		if e.effect != EffectRejected {
			readFindings = append(readFindings, r.attribute(e)...)
		}
	}
	for _, e := range effects {
		idxs := r.attribute(e)
		if len(idxs) == 0 && e.effect == EffectRejected {
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
			acc.add(r.objects, name, e, ratchets)
		}
	}
	r.addResidual(name, residual, ratchets)
}

// strategyValidator is the apiserver's custom resource strategy of the
// version, built on first use. A schema it cannot build a validator of
// (which the apiserver would have refused) validates nothing.
func (r *ObjectReader) strategyValidator() objectValidator {
	if r.validator == nil {
		v, err := r.strategy()
		if err != nil {
			v = noValidator{}
		}
		r.validator = v
	}
	return r.validator
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

// attribute returns the findings an effect is joined to: from the
// effect's field up to the root, the first findings at one field whose
// check can cause the effect; failing that, the first findings at all;
// failing that, the findings about the whole CRD or version (a scope
// change, say).
func (r *ObjectReader) attribute(e objectEffect) []int {
	for _, prefer := range []bool{true, false} {
		for p := e.schemaPath; p != ""; p = parentPath(p) {
			var hit []int
			for _, i := range r.byField[p] {
				if !prefer || causes(r.findings[i].Check, e) {
					hit = append(hit, i)
				}
			}
			if len(hit) > 0 {
				return hit
			}
		}
	}
	return r.crdLevel
}

// causes tells whether a finding of check can cause the effect e.
func causes(check string, e objectEffect) bool {
	switch e.effect {
	case EffectPruned:
		switch check {
		case config.CheckExistingFieldRemoval, config.CheckPreserveUnknownFields, config.CheckAdditionalProperties,
			config.CheckNullable, config.CheckType, config.CheckIntOrString, config.CheckEmbeddedResource, config.CheckUnhandled:
			return true
		}
		return false
	case EffectDefaulted:
		return check == config.CheckDefault
	case EffectRejected:
		if e.required {
			return check == config.CheckRequired
		}
		switch check {
		case config.CheckRequired, config.CheckDefault, config.CheckExistingFieldRemoval,
			config.CheckPreserveUnknownFields, config.CheckMapType:
			return false
		}
		return true
	}
	return false
}

// parentPath is the schema path above p ("" above the root "^").
func parentPath(p string) string {
	switch {
	case p == "^" || p == "":
		return ""
	case strings.HasSuffix(p, "[*]") || strings.HasSuffix(p, "{*}"):
		return p[:len(p)-3]
	}
	if i := strings.LastIndexByte(p, '.'); i > 0 {
		return p[:i]
	}
	return "^"
}

// addResidual reports effects that no finding explains as existingResources
// findings, one per object and effect (there should be none: an object
// invalid before the update, or a gap of the comparison).
func (r *ObjectReader) addResidual(name string, effects []objectEffect, ratchets bool) {
	if len(effects) == 0 || !r.cfg.Checks.CRD.ExistingResources.Enabled {
		return
	}
	subject := fmt.Sprintf("%s %s %s", existingNoun(r.source), r.kind, name)
	byEffect := map[Effect][]string{}
	for _, e := range effects {
		byEffect[e.effect] = append(byEffect[e.effect], e.field+": "+e.value)
	}
	for _, effect := range []Effect{EffectPruned, EffectDefaulted, EffectRejected} {
		list := byEffect[effect]
		if len(list) == 0 {
			continue
		}
		detail := summarizeList(list)
		switch effect {
		case EffectPruned:
			r.residual.crdLevel(config.EnforcementStrict, r.version, config.CheckExistingResources,
				"%s would lose data, pruned under the new schema: %s", subject, detail)
		case EffectDefaulted:
			r.residual.crdLevel(config.EnforcementStrict, r.version, config.CheckExistingResources,
				"%s would read differently under the new schema: %s", subject, detail)
		case EffectRejected:
			r.residual.crdLevel(config.EnforcementStrict, r.version, config.CheckExistingResources,
				"%s would be invalid: %s%s", subject, detail, ratchetNote(r.source, ratchets, 1, 1))
		}
	}
}

func existingNoun(source string) string {
	if source == SourceSamples {
		return "sample"
	}
	return "existing"
}

// summarizeList renders items sorted, the first few in full.
func summarizeList(items []string) string {
	slices.Sort(items)
	items = slices.Compact(items)
	const max = 3
	if len(items) > max {
		return strings.Join(items[:max], "; ") + fmt.Sprintf("; and %d more", len(items)-max)
	}
	return strings.Join(items, "; ")
}

// impactAcc accumulates the impact of one finding.
type impactAcc struct {
	lastObject int // the last object counted (objects are numbered from 1)
	affected   int
	ratcheted  int
	rejected   bool // the last object counted was rejected
	effects    map[Effect]*effectAcc
}

type effectAcc struct {
	lastObject int
	objects    int
	examples   []ObjectEffect // the smallest names, sorted
}

func (a *impactAcc) add(objectNo int, name string, e objectEffect, ratchets bool) {
	if a.lastObject != objectNo {
		a.lastObject, a.rejected = objectNo, false
		a.affected++
	}
	if e.effect == EffectRejected && !a.rejected {
		a.rejected = true
		if ratchets {
			a.ratcheted++
		}
	}
	if a.effects == nil {
		a.effects = map[Effect]*effectAcc{}
	}
	ea := a.effects[e.effect]
	if ea == nil {
		ea = &effectAcc{}
		a.effects[e.effect] = ea
	}
	if ea.lastObject == objectNo {
		return // one example per object
	}
	ea.lastObject = objectNo
	ea.objects++
	i := sort.Search(len(ea.examples), func(i int) bool { return ea.examples[i].Object >= name })
	if i >= maxExamples {
		return
	}
	ea.examples = slices.Insert(ea.examples, i, ObjectEffect{Object: name, Field: e.field, Value: e.value, schemaPath: e.schemaPath})
	if len(ea.examples) > maxExamples {
		ea.examples = ea.examples[:maxExamples]
	}
}

// differ finds the fields whose value differs between an object read under
// the old CRD and under the new one.
type differ struct {
	out *[]objectEffect
	// stored: the objects are read from the apiserver, which applied the
	// old defaults on read: a value equal to the old default may be
	// stored, or only read (defaulting is not persisted until a write).
	stored bool
}

// object compares a (old read) and b (new read) at the concrete path
// segments path and the schema path sp, under the old and the new
// structural schemas of that node (nil where a side declares none).
func (d differ) object(path []string, sp string, a, b any, oldS, newS *structuralschema.Structural, root bool) {
	if d.stored && oldS != nil && oldS.Default.Object != nil && a != nil &&
		!sameDefault(oldS, newS) && sameValue(a, oldS.Default.Object) && sameValue(a, b) {
		to := "absent"
		if newS != nil && newS.Default.Object != nil {
			to = renderValue(newS.Default.Object)
		}
		d.emit(EffectDefaulted, path, sp, fmt.Sprintf("%s, the old default -> %s where it is not stored", renderValue(a), to))
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			d.emit(EffectDefaulted, path, sp, renderValue(a)+" -> "+renderValue(b))
			return
		}
		for k, x := range av {
			if root && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			csp, co, cn := childSchema(sp, k, oldS, newS)
			cpath := append(path[:len(path):len(path)], fieldSegment(k, len(path) == 0))
			y, present := bv[k]
			if !present {
				d.emit(EffectPruned, cpath, csp, renderValue(x))
				continue
			}
			d.object(cpath, csp, x, y, co, cn, false)
		}
		for k, y := range bv {
			if _, present := av[k]; present || root && (k == "apiVersion" || k == "kind" || k == "metadata") {
				continue
			}
			if !storable(oldS, k) {
				// The default of a new optional field: no stored object
				// could hold data there (docs/checks.md, "Never findings").
				continue
			}
			csp, _, _ := childSchema(sp, k, oldS, newS)
			d.emit(EffectDefaulted, append(path[:len(path):len(path)], fieldSegment(k, len(path) == 0)), csp, "absent -> "+renderValue(y))
		}
	case []any:
		bv, ok := b.([]any)
		if !ok {
			d.emit(EffectDefaulted, path, sp, renderValue(a)+" -> "+renderValue(b))
			return
		}
		var co, cn *structuralschema.Structural
		if oldS != nil {
			co = oldS.Items
		}
		if newS != nil {
			cn = newS.Items
		}
		for i := range max(len(av), len(bv)) {
			cpath := append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]")
			switch {
			case i >= len(bv):
				d.emit(EffectPruned, cpath, sp+"[*]", renderValue(av[i]))
			case i >= len(av):
				d.emit(EffectDefaulted, cpath, sp+"[*]", "absent -> "+renderValue(bv[i]))
			default:
				d.object(cpath, sp+"[*]", av[i], bv[i], co, cn, false)
			}
		}
	default:
		if !sameScalar(a, b) {
			d.emit(EffectDefaulted, path, sp, renderValue(a)+" -> "+renderValue(b))
		}
	}
}

func (d differ) emit(effect Effect, path []string, sp, value string) {
	*d.out = append(*d.out, objectEffect{effect: effect, field: strings.Join(path, ""), schemaPath: sp, value: value})
}

// fieldSegment is the concrete path segment of a map key: "spec" at the
// root, ".spec" below.
func fieldSegment(k string, first bool) string {
	if first {
		return k
	}
	return "." + k
}

// childSchema returns the schema path of the field k of an object at sp and
// its old and new schemas: a declared property (in either schema) is
// ".k", an entry of a map (additionalProperties) is "{*}".
func childSchema(sp, k string, oldS, newS *structuralschema.Structural) (string, *structuralschema.Structural, *structuralschema.Structural) {
	prop := func(s *structuralschema.Structural) (*structuralschema.Structural, bool) {
		if s == nil {
			return nil, false
		}
		if p, ok := s.Properties[k]; ok {
			return &p, true
		}
		return nil, false
	}
	entry := func(s *structuralschema.Structural) *structuralschema.Structural {
		if s == nil || s.AdditionalProperties == nil {
			return nil
		}
		return s.AdditionalProperties.Structural
	}
	po, okOld := prop(oldS)
	pn, okNew := prop(newS)
	if okOld || okNew {
		return childPath(sp, k), po, pn
	}
	if eo, en := entry(oldS), entry(newS); eo != nil || en != nil ||
		oldS != nil && oldS.AdditionalProperties != nil || newS != nil && newS.AdditionalProperties != nil {
		return sp + "{*}", eo, en
	}
	return childPath(sp, k), nil, nil
}

// errorField is the field a validation error is about. Most errors name it
// in Field; those of combinators (allOf, anyOf, oneOf, not) quote it at
// the start of their detail ("\"spec.x\" must validate all the schemas"),
// and the format checks of the 1.37 library name it at the end ("Checked
// value must be of type integer (default format) in spec.amount").
func errorField(e *field.Error) string {
	if e.Field == "" || e.Field == "<nil>" {
		if strings.HasPrefix(e.Detail, `"`) {
			if name, _, ok := strings.Cut(e.Detail[1:], `"`); ok {
				return name
			}
		}
		if strings.HasPrefix(e.Detail, "Checked value must be ") {
			if i := strings.LastIndex(e.Detail, " in "); i >= 0 {
				return e.Detail[i+len(" in "):]
			}
		}
		return ""
	}
	return e.Field
}

// readsDiffer tells whether reading an object under the new schema n may
// change what reading it under the old schema o gave: a property, unknown
// fields or map entries no longer kept (pruning), a default changed or
// removed, null no longer allowed, a type or an embedded resource changed
// (conservatively). A property only n declares changes nothing stored: its
// default is the "new optional field" rule, not an effect.
func readsDiffer(o, n *structuralschema.Structural) bool {
	switch {
	case o == nil || n == nil:
		return o != n
	case o.Type != n.Type, o.XEmbeddedResource != n.XEmbeddedResource,
		o.XPreserveUnknownFields && !n.XPreserveUnknownFields,
		o.Nullable && !n.Nullable,
		!sameValue(o.Default.Object, n.Default.Object),
		(o.Items == nil) != (n.Items == nil):
		return true
	}
	for name, np := range n.Properties {
		if _, ok := o.Properties[name]; !ok && (hasDefault(&np) || o.XPreserveUnknownFields || o.AdditionalProperties != nil) {
			// A new property's default may satisfy a required field; where
			// the old schema kept unknown fields or map entries, stored
			// objects may hold data under the new property's name.
			return true
		}
	}
	for name, op := range o.Properties {
		np, ok := n.Properties[name]
		if !ok {
			if !n.XPreserveUnknownFields {
				return true
			}
			continue
		}
		if readsDiffer(&op, &np) {
			return true
		}
	}
	if o.AdditionalProperties != nil {
		if n.AdditionalProperties == nil {
			return true
		}
		if o.AdditionalProperties.Structural != nil || n.AdditionalProperties.Structural != nil {
			if readsDiffer(o.AdditionalProperties.Structural, n.AdditionalProperties.Structural) {
				return true
			}
		}
	}
	return o.Items != nil && readsDiffer(o.Items, n.Items)
}

// hasDefault tells whether s or a schema below it has a default.
func hasDefault(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefault(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasDefault(s.AdditionalProperties.Structural) {
		return true
	}
	return hasDefault(s.Items)
}

// storable tells whether an object under the old schema s could hold the
// field k: s declares it, holds map entries, or keeps unknown fields.
func storable(s *structuralschema.Structural, k string) bool {
	if s == nil {
		return false
	}
	_, declared := s.Properties[k]
	return declared || s.AdditionalProperties != nil || s.XPreserveUnknownFields
}

// schemaPathOf turns the field path of a validation error (spec.items[2].name,
// spec.labels[key], spec.labels.key) into a schema path (^.spec.items[*].name,
// ^.spec.labels{*}) by walking the schema s.
func schemaPathOf(s *structuralschema.Structural, fieldPath string) string {
	out, cur := "^", s
	rest := strings.TrimPrefix(fieldPath, "<nil>")
	for rest != "" {
		var seg string
		bracket := false
		switch rest[0] {
		case '.':
			rest = rest[1:]
			continue
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				end = len(rest) - 1
			}
			seg, rest, bracket = rest[1:end], rest[min(end+1, len(rest)):], true
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			seg, rest = rest[:end], rest[end:]
		}
		switch {
		case (bracket || allDigits(seg)) && cur != nil && cur.Items != nil:
			out, cur = out+"[*]", cur.Items
		case bracket && allDigits(seg):
			out, cur = out+"[*]", nil
		case cur != nil && !bracket && hasProperty(cur, seg):
			p := cur.Properties[seg]
			out, cur = childPath(out, seg), &p
		case cur != nil && cur.AdditionalProperties != nil:
			out, cur = out+"{*}", cur.AdditionalProperties.Structural
		default:
			out, cur = childPath(out, seg), nil
		}
	}
	return out
}

func hasProperty(s *structuralschema.Structural, name string) bool {
	_, ok := s.Properties[name]
	return ok
}

// renderValue is a value as it appears in a message, bounded.
func renderValue(v any) string {
	if v == nil {
		return "null"
	}
	if s, ok := v.(string); ok {
		return boundText(strconv.Quote(s), 64)
	}
	return boundText(canonicalValue(v), 64)
}

// sameDefault tells whether two schemas have the same default.
func sameDefault(oldS, newS *structuralschema.Structural) bool {
	if newS == nil {
		return false
	}
	return sameValue(oldS.Default.Object, newS.Default.Object)
}

// sameValue compares two decoded values by their canonical JSON.
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return canonicalValue(a) == canonicalValue(b)
}

func sameScalar(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case int64:
		if bv, ok := b.(int64); ok {
			return av == bv
		}
	case float64:
		if bv, ok := b.(float64); ok {
			return av == bv
		}
	}
	return canonicalValue(a) == canonicalValue(b)
}

// deepCopyJSON copies a decoded JSON or YAML value: maps and lists are
// copied (a nil one becomes an untyped nil), anything else is kept as it is.
func deepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		if x == nil {
			return nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyJSON(e)
		}
		return out
	}
	return v
}

// splitCombinators returns the part of a field path before its first
// combinator segment (.allOf[i], .anyOf[i], .oneOf[i], .not), and the path
// with every such segment removed.
func splitCombinators(field string) (base, stripped string) {
	base = field
	var b strings.Builder
	rest := field
	first := true
	for {
		i, n := nextCombinator(rest)
		if i < 0 {
			b.WriteString(rest)
			break
		}
		if first {
			base = field[:len(field)-len(rest)+i]
			first = false
		}
		b.WriteString(rest[:i])
		rest = rest[i+n:]
	}
	return base, b.String()
}

// nextCombinator finds the next combinator segment in s: its index and
// length, -1 when there is none.
func nextCombinator(s string) (int, int) {
	best, length := -1, 0
	for _, kw := range []string{".allOf[", ".anyOf[", ".oneOf["} {
		if i := strings.Index(s, kw); i >= 0 && (best < 0 || i < best) {
			j := strings.IndexByte(s[i:], ']')
			best, length = i, j+1
		}
	}
	if i := strings.Index(s, ".not"); i >= 0 && (best < 0 || i < best) && (len(s) == i+4 || strings.ContainsRune(".[{", rune(s[i+4]))) {
		best, length = i, 4
	}
	return best, length
}
