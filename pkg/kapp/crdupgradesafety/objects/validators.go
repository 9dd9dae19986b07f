package objects

import (
	"slices"
	"strconv"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	"github.com/crdsafety/kapp/pkg/kapp/internal/celcompat"
	"github.com/crdsafety/kapp/pkg/kapp/internal/lru"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Validators keeps the validators ObjectReader.Read builds for a batch of
// objects (newVersionValidator, pruned to what the batch reaches) for the
// batches and runs that follow, least recently used out beyond its bounds:
// a number of entries, and an estimate of their memory (validatorMemory).
// A batch's validators depend on the CRD, the version, and which keys its
// objects have where (shapeOf): reviews of the same new CRD (a burst's
// rounds, the pages of one LIST, identical reviews) build them once. The
// key holds the CRD by identity: only for CRDs that nobody modifies (the
// webhook's, decoded once per content and shared). Safe for concurrent
// use; a nil *Validators builds every time.
type Validators struct {
	cache *lru.Cache[validatorsKey, *versionValidator]
}

type validatorsKey struct {
	crd            *apiextv1.CustomResourceDefinition
	version, shape string
	cel            celcompat.Semantics
}

// DefaultValidatorsBytes bounds the estimated memory of a Validators
// (validatorMemory): the validators of the 10 largest real CRDs with some
// room (2.6 MB for prometheuses, 4.3 MB for Gateway API's httproutes with
// its 106 CEL rules, measured; estimated 6 MB and 7.5 MB).
const DefaultValidatorsBytes = 128 << 20

// NewValidators returns a cache of the validators of at most max batch
// shapes and DefaultValidatorsBytes.
func NewValidators(max int) *Validators {
	return NewValidatorsWithin(max, DefaultValidatorsBytes)
}

// NewValidatorsWithin returns a cache of the validators of at most max
// batch shapes and maxBytes of estimated memory.
func NewValidatorsWithin(max int, maxBytes int64) *Validators {
	return &Validators{cache: lru.New[validatorsKey, *versionValidator](max, maxBytes)}
}

// Stats are the cache's counters.
func (c *Validators) Stats() lru.Stats { return c.cache.Stats() }

// UseValidators makes r take the validators of its batches from c.
func (r *ObjectReader) UseValidators(c *Validators) {
	r.validators = c
}

// get returns newVersionValidatorAt(crd, version, objs, sem), from the
// cache when a batch of the same shape was validated under the same CRD and
// version with the same CEL semantics.
func (c *Validators) get(crd *apiextv1.CustomResourceDefinition, version string, objs []any, sem celcompat.Semantics) (*versionValidator, error) {
	if c == nil {
		return newVersionValidatorAt(crd, version, objs, sem)
	}
	key := validatorsKey{crd: crd, version: version, shape: shapeOf(objs), cel: sem}
	if v, ok := c.cache.Get(key); ok {
		return v, nil
	}
	v, err := newVersionValidatorAt(crd, version, objs, sem)
	if err != nil || v == nil {
		return v, err
	}
	v, _ = c.cache.Add(key, v, validatorMemory(crd, version)+int64(len(key.shape)))
	return v, nil
}

// The weights of validatorMemory, measured on the heap on the real CRDs of
// hack/fetch-crds.sh (TestValidatorSizeEstimate): the validators of a
// version hold up to 1.3-3 KB per node of its schema (the structural
// schema, the OpenAPI validator) and, per CEL rule, 35-80 KB for a short
// one and ~100 bytes more per byte of its text (its compiled program and
// type declarations: 338 KB for a rule of 3 KB); a decoded CRD ~560 bytes
// per node.
const (
	validatorBase        = 64 << 10
	validatorPerNode     = 3 << 10
	validatorPerRule     = 64 << 10
	validatorPerRuleByte = 128
	validatorPerCRDNode  = 640
	validatorMaxEstimate = 1 << 40
)

// validatorMemory estimates, from above, the memory the validators of a
// version of crd hold, and the CRD they keep alive (the cache's key): the
// nodes and CEL rules of the version's schema, the nodes of the CRD's.
// Validators of a batch are pruned to what its objects reach, so they
// hold less.
func validatorMemory(crd *apiextv1.CustomResourceDefinition, version string) int64 {
	var ver, crdNodes schemaWeights
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		var w schemaWeights
		w.add(checks.VersionSchema(v))
		crdNodes.nodes += w.nodes
		if v.Name == version {
			ver = w
		}
	}
	return min(validatorMaxEstimate, validatorBase+ver.nodes*validatorPerNode+ver.rules*validatorPerRule+
		ver.ruleBytes*validatorPerRuleByte+crdNodes.nodes*validatorPerCRDNode)
}

// schemaWeights counts the nodes of a schema, its CEL rules and their
// text.
type schemaWeights struct {
	nodes, rules, ruleBytes int64
}

func (w *schemaWeights) add(s *apiextv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	w.nodes++
	for _, r := range s.XValidations {
		w.rules++
		w.ruleBytes += int64(len(r.Rule) + len(r.MessageExpression))
	}
	add := w.add
	for k := range s.Properties {
		c := s.Properties[k]
		add(&c)
	}
	for k := range s.PatternProperties {
		c := s.PatternProperties[k]
		add(&c)
	}
	if s.Items != nil {
		add(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			add(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		add(s.AdditionalProperties.Schema)
	}
	if s.AdditionalItems != nil {
		add(s.AdditionalItems.Schema)
	}
	for _, list := range [][]apiextv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			add(&list[i])
		}
	}
	add(s.Not)
}

// shapeOf describes, for a batch of values, which keys the objects have at
// each place and where there are objects, lists and other values, merged
// over the batch: everything the pruning of the validators reads
// (pruneAbsentProperties, dropUnreachedRules, reachedSchema look at the
// keys of objects and the elements of lists, never at other values). Two
// batches of the same shape get the same validators.
func shapeOf(vals []any) string {
	s := &shape{}
	for _, v := range vals {
		s.add(v)
	}
	var b strings.Builder
	s.write(&b)
	return b.String()
}

type shape struct {
	kinds byte // 1 object, 2 list, 4 anything else
	keys  map[string]*shape
	items *shape
}

func (s *shape) add(v any) {
	switch v := v.(type) {
	case map[string]any:
		s.kinds |= 1
		if s.keys == nil {
			s.keys = map[string]*shape{}
		}
		for k, x := range v {
			c := s.keys[k]
			if c == nil {
				c = &shape{}
				s.keys[k] = c
			}
			c.add(x)
		}
	case []any:
		s.kinds |= 2
		if s.items == nil {
			s.items = &shape{}
		}
		for _, x := range v {
			s.items.add(x)
		}
	default:
		s.kinds |= 4
	}
}

func (s *shape) write(b *strings.Builder) {
	b.WriteByte('0' + s.kinds)
	if s.keys != nil {
		keys := make([]string, 0, len(s.keys))
		for k := range s.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for _, k := range keys {
			// Length-prefixed: no key can pass for another's end.
			b.WriteString(strconv.Itoa(len(k)))
			b.WriteByte(':')
			b.WriteString(k)
			s.keys[k].write(b)
		}
		b.WriteByte('}')
	}
	if s.items != nil {
		b.WriteByte('[')
		s.items.write(b)
		b.WriteByte(']')
	}
}
