package webhook

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/crdsafety/kapp/pkg/kapp/internal/lru"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decoding a review of a large CRD was most of the cost of judging it:
// encoding/json (sigs.k8s.io/json) validates the whole body before decoding
// it, and the schema's union types (items, additionalProperties,
// dependencies) implement UnmarshalJSON with a nested json.Unmarshal, which
// validates and decodes each nested schema again at every level of
// nesting. fastDecodeReview decodes a review in one pass with the JSON v2
// decoder (github.com/go-json-experiment/json), whose unmarshalers for the
// union types below read from the same decoder; the result is the one
// decodeReviewSlow gives (TestFastDecodeMatches on every real CRD of the
// tests), which stays the path of any body the fast one does not decode.

// crdOptions are the options of the fast decoder: case-sensitive names as
// the apiserver's decoder (sigs.k8s.io/json.UnmarshalCaseSensitive), and
// what encoding/json accepts and JSON v2 does not by default.
var crdOptions = json.JoinOptions(
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	json.WithUnmarshalers(json.JoinUnmarshalers(
		json.UnmarshalFromFunc(unmarshalPropsOrArray),
		json.UnmarshalFromFunc(unmarshalPropsOrBool),
		json.UnmarshalFromFunc(unmarshalPropsOrStringArray),
		json.UnmarshalFromFunc(unmarshalJSON),
	)),
)

// unmarshalPropsOrArray is apiextv1.JSONSchemaPropsOrArray.UnmarshalJSON
// reading from dec: an object is a schema, an array a list of schemas,
// anything else the zero value.
func unmarshalPropsOrArray(dec *jsontext.Decoder, s *apiextv1.JSONSchemaPropsOrArray) error {
	var nw apiextv1.JSONSchemaPropsOrArray
	if err := schemaOrList(dec, &nw.Schema, &nw.JSONSchemas); err != nil {
		return err
	}
	*s = nw
	return nil
}

// schemaOrList reads the union of a schema and a list that two of the
// schema's types share: an object into *schema, an array into *list,
// anything else skipped (their UnmarshalJSON leaves both zero).
func schemaOrList[T any](dec *jsontext.Decoder, schema **apiextv1.JSONSchemaProps, list *T) error {
	switch dec.PeekKind() {
	case '{':
		*schema = &apiextv1.JSONSchemaProps{}
		return json.UnmarshalDecode(dec, *schema)
	case '[':
		return json.UnmarshalDecode(dec, list)
	default:
		return dec.SkipValue()
	}
}

// errBoolOrSchema is apiextv1.JSONSchemaPropsOrBool.UnmarshalJSON's error.
var errBoolOrSchema = errors.New("boolean or JSON schema expected")

// unmarshalPropsOrBool is apiextv1.JSONSchemaPropsOrBool.UnmarshalJSON
// reading from dec.
func unmarshalPropsOrBool(dec *jsontext.Decoder, s *apiextv1.JSONSchemaPropsOrBool) error {
	var nw apiextv1.JSONSchemaPropsOrBool
	switch dec.PeekKind() {
	case '{':
		nw.Schema = &apiextv1.JSONSchemaProps{}
		if err := json.UnmarshalDecode(dec, nw.Schema); err != nil {
			return err
		}
		nw.Allows = true
	case 't', 'f':
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		nw.Allows = tok.Bool()
	default:
		if err := dec.SkipValue(); err != nil {
			return err
		}
		return errBoolOrSchema
	}
	*s = nw
	return nil
}

// unmarshalPropsOrStringArray is
// apiextv1.JSONSchemaPropsOrStringArray.UnmarshalJSON reading from dec.
func unmarshalPropsOrStringArray(dec *jsontext.Decoder, s *apiextv1.JSONSchemaPropsOrStringArray) error {
	var nw apiextv1.JSONSchemaPropsOrStringArray
	if err := schemaOrList(dec, &nw.Schema, &nw.Property); err != nil {
		return err
	}
	*s = nw
	return nil
}

// unmarshalJSON is apiextv1.JSON.UnmarshalJSON reading from dec: the value
// as it is, nothing for null.
func unmarshalJSON(dec *jsontext.Decoder, s *apiextv1.JSON) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != 'n' {
		s.Raw = append(s.Raw[:0], v...)
	}
	return nil
}

// fastReview is an AdmissionReview whose objects are kept as they are
// (validated once with the rest of the body): each CRD is found in the
// cache by its hash or decoded.
type fastReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *struct {
		admissionv1.AdmissionRequest `json:",inline"`
		// The objects are kept as they are: their hashes are the key of
		// the CRDs in the cache and of the review's flight.
		Object    jsontext.Value `json:"object,omitempty"`
		OldObject jsontext.Value `json:"oldObject,omitempty"`
	} `json:"request,omitempty"`
}

// fastDecodeReview decodes a review as decodeReviewSlow does, in one pass,
// each CRD from cache when it holds one of the same bytes. ok is false
// when the body does not decode this way (decodeReviewSlow then says why).
func fastDecodeReview(body []byte, cache *crdCache) (review *admissionv1.AdmissionReview, objs objects, ok bool) {
	var typed fastReview
	if err := json.Unmarshal(body, &typed, crdOptions); err != nil || typed.Request == nil {
		return nil, objects{}, false
	}
	req := &typed.Request.AdmissionRequest
	for _, v := range []jsontext.Value{typed.Request.Object, typed.Request.OldObject} {
		if len(v) > 0 && v.Kind() != '{' && v.Kind() != 'n' {
			return nil, objects{}, false // not an object: the slow path says so as before
		}
	}
	var err error
	key := sha256.New()
	if isObject(typed.Request.Object) {
		var sum [sha256.Size]byte
		if objs.newCRD, sum, err = cache.get(typed.Request.Object); err != nil {
			return nil, objects{}, false
		}
		key.Write(sum[:])
	}
	key.Write([]byte{0})
	if isObject(typed.Request.OldObject) {
		var sum [sha256.Size]byte
		if objs.oldCRD, sum, err = cache.get(typed.Request.OldObject); err != nil {
			return nil, objects{}, false
		}
		key.Write(sum[:])
	}
	objs.key = string(key.Sum(nil))
	if objs.newCRD != nil {
		objs.err = checkCRD("object", objs.newCRD)
	}
	if objs.oldCRD != nil && objs.err == nil {
		objs.err = checkCRD("oldObject", objs.oldCRD)
	}
	return &admissionv1.AdmissionReview{TypeMeta: typed.TypeMeta, Request: req}, objs, true
}

// isObject reports whether v is a JSON object (not absent, not null).
func isObject(v jsontext.Value) bool {
	return len(v) > 0 && v.Kind() == '{'
}

// decodeCRDFast decodes one CRD with the fast decoder.
func decodeCRDFast(raw []byte) (*apiextv1.CustomResourceDefinition, error) {
	crd := &apiextv1.CustomResourceDefinition{}
	if err := json.Unmarshal(raw, crd, crdOptions); err != nil {
		return nil, fmt.Errorf("decoding a CRD: %w", err)
	}
	return crd, nil
}

// crdMemoryFactor is how many bytes of memory a decoded CRD holds per
// byte of its JSON, at most: 1.0 to 3.5 on the real CRDs of
// hack/fetch-crds.sh (the schema's nodes, ~560 bytes each, and its
// strings), 4 for room (TestCRDSizeEstimate measures it).
const crdMemoryFactor = 4

// DefaultCRDCacheBytes bounds the memory of the CRDs the reviewer keeps
// decoded, estimated as crdMemoryFactor times their JSON: the 10 largest
// real CRDs of the benchmarks (hack/fetch-crds.sh) are 6.2 MB of JSON,
// 12.4 MB old and new, ~40 MB decoded. DefaultCRDCacheEntries bounds
// their number.
const (
	DefaultCRDCacheBytes   = 64 << 20
	DefaultCRDCacheEntries = 1024
)

// crdCache keeps the CRDs of recent reviews decoded (the stored CRD and
// the CRD as it would be stored), keyed by the SHA-256 of their JSON,
// least recently used first out once their estimated memory exceeds
// maxBytes (crdMemoryFactor times their JSON): a review carries the
// stored CRD, which rarely changes between reviews, and the same new CRD
// comes in several reviews (a server-side dry run, then the write; a
// GitOps controller re-applying it; the apiserver's retries). A CRD
// changed in any byte (a new resourceVersion at least) has another key:
// the cache never serves another CRD than the review's. The CRDs it
// returns are shared and must not be modified (the evaluation copies what
// it changes: checks.ValidatedAt).
type crdCache struct {
	cache *lru.Cache[[sha256.Size]byte, *apiextv1.CustomResourceDefinition]
}

func newCRDCache(maxBytes int64) *crdCache {
	return &crdCache{cache: lru.New[[sha256.Size]byte, *apiextv1.CustomResourceDefinition](DefaultCRDCacheEntries, maxBytes)}
}

// crdMemory is the estimated memory of the CRD decoded from raw.
func crdMemory(raw []byte) int64 { return int64(len(raw)) * crdMemoryFactor }

// get returns the CRD raw encodes, decoded once for every review of the
// same bytes, and the SHA-256 of raw. A nil cache decodes every time.
func (c *crdCache) get(raw []byte) (*apiextv1.CustomResourceDefinition, [sha256.Size]byte, error) {
	key := sha256.Sum256(raw)
	if c == nil {
		crd, err := decodeCRDFast(raw)
		return crd, key, err
	}
	if crd, ok := c.cache.Get(key); ok {
		return crd, key, nil
	}
	crd, err := decodeCRDFast(raw)
	if err != nil {
		return nil, key, err
	}
	// Decoded meanwhile by another review: that one is shared.
	crd, _ = c.cache.Add(key, crd, crdMemory(raw))
	return crd, key, nil
}
