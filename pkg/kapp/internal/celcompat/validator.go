package celcompat

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
)

// Semantics names the CEL values a CRD's rules are evaluated with: those of
// the linked library (Kubernetes 1.37), or those of the apiservers before
// 1.37 (values_v135.go).
type Semantics int

const (
	// Linked is the linked library's semantics: Kubernetes 1.37's.
	Linked Semantics = iota
	// Before137 is the semantics of Kubernetes 1.35 and 1.36: == on a set
	// or map list ignores duplicates, + on them keeps the left list's
	// duplicates (k8s.io/apiserver v0.35.0).
	Before137
)

func (s Semantics) String() string {
	if s == Before137 {
		return "before 1.37"
	}
	return "1.37"
}

// ErrLayout is returned when the linked library's validator is not shaped
// as this package expects (its activation factory), so that the older
// semantics cannot be put in: the library was upgraded; see Use.
var ErrLayout = errors.New("the linked CEL validator has no activation factory of the expected type")

// NewValidator is cel.NewValidator evaluating the rules with sem.
func NewValidator(s *structuralschema.Structural, isResourceRoot bool, perCallLimit uint64, sem Semantics) (*cel.Validator, error) {
	v := cel.NewValidator(s, isResourceRoot, perCallLimit)
	if err := Use(v, sem); err != nil {
		return nil, err
	}
	return v, nil
}

// activationFactory is the type of the validator's celActivationFactory
// (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel, validation.go),
// which turns the object (and the old object) into the values the rules of
// a schema node see.
type activationFactory = func(sts *structuralschema.Structural, obj, oldObj interface{}) (interpreter.Activation, interpreter.Activation)

// Use makes v (and every validator below it) evaluate its rules with sem.
// Linked leaves v as the library built it.
//
// Why this way: the library's validator (its walk of the schema, cost
// budget, ratcheting, messages and field paths) is the same file in
// k8s.io/apiextensions-apiserver v0.35.0 and v0.37; what 1.37 changed is
// only the values its activation hands the compiled programs
// (k8s.io/apiserver/pkg/cel/common). The CEL environment's compatibility
// version does not govern those values. So the library's validator is
// kept whole and its activation factory, an unexported field, is replaced
// by one that makes the values of v0.35.0. The field is found by name and
// type: a library whose validator is shaped otherwise gives ErrLayout, not
// a silent 1.37 verdict (TestUseFindsTheActivationFactory).
func Use(v *cel.Validator, sem Semantics) error {
	if v == nil || sem == Linked {
		return nil
	}
	return use(v, before137Activations)
}

func use(v *cel.Validator, f activationFactory) error {
	if v == nil {
		return nil
	}
	field := reflect.ValueOf(v).Elem().FieldByName("celActivationFactory")
	if !field.IsValid() || field.Type() != reflect.TypeOf(f) {
		return ErrLayout
	}
	reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Set(reflect.ValueOf(f))
	for name, p := range v.Properties {
		if err := use(&p, f); err != nil {
			return err
		}
		v.Properties[name] = p
	}
	for _, a := range v.AllOfValidators {
		if err := use(a, f); err != nil {
			return err
		}
	}
	if err := use(v.Items, f); err != nil {
		return err
	}
	return use(v.AdditionalProperties, f)
}

// UseInStrategy makes the CEL validator of strategy, the value
// k8s.io/apiextensions-apiserver/pkg/registry/customresource.NewStrategy
// returns, evaluate its rules with sem (see Use).
func UseInStrategy(strategy any, sem Semantics) error {
	if sem == Linked {
		return nil
	}
	sv := reflect.ValueOf(strategy)
	if sv.Kind() == reflect.Pointer {
		sv = sv.Elem()
	}
	if sv.Kind() != reflect.Struct {
		return fmt.Errorf("%w: strategy is a %T", ErrLayout, strategy)
	}
	field := sv.FieldByName("celValidator")
	if !field.IsValid() || field.Type() != reflect.TypeOf((*cel.Validator)(nil)) {
		return fmt.Errorf("%w: the strategy has no CEL validator field", ErrLayout)
	}
	return Use((*cel.Validator)(field.UnsafePointer()), sem)
}

// before137Activations is the library's validationActivationWithOldSelf
// (which resolves oldSelf only where a rule uses it) with the values of
// v0.35.0.
func before137Activations(sts *structuralschema.Structural, obj, oldObj interface{}) (interpreter.Activation, interpreter.Activation) {
	s := &model.Structural{Structural: sts}
	va := &activation{self: UnstructuredToVal(obj, s)}
	optional := &activation{self: va.self, hasOldSelf: true, oldSelf: types.OptionalNone}
	if oldObj != nil {
		va.oldSelf = UnstructuredToVal(oldObj, s)
		va.hasOldSelf = true
		optional.oldSelf = types.OptionalOf(va.oldSelf)
	}
	return va, optional
}

// activation is the library's validationActivation.
type activation struct {
	self, oldSelf ref.Val
	hasOldSelf    bool
}

func (a *activation) ResolveName(name string) (interface{}, bool) {
	switch name {
	case cel.ScopedVarName:
		return a.self, true
	case cel.OldScopedVarName:
		return a.oldSelf, a.hasOldSelf
	default:
		return nil, false
	}
}

func (a *activation) Parent() interpreter.Activation { return nil }
