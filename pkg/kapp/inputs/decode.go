package inputs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strings"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/internal/yamljson"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsjson "sigs.k8s.io/json"
)

// This file holds the decoding of documents into typed CRDs and kapp
// Config resources. Every document is read once: YAML is converted to
// JSON and decoded straight into the typed CRD (no intermediate map);
// documents are decoded in parallel, identical ones once.
//
// JSON is decoded as the apiserver decodes it (sigs.k8s.io/json): keys
// match case-sensitively, so "MAXLENGTH" or "maxlength" is an unknown field
// the apiserver drops, not a second spelling of maxLength. This is also
// what a deploy judges: kapp reads its files into unstructured objects and
// our check converts them to typed CRDs with case-sensitive keys.

var (
	kappConfigAPIVersion = "kapp.k14s.io/v1alpha1"
	kappConfigLabelKey   = "kapp.k14s.io/config"
	crdV1APIVersion      = apiextv1.SchemeGroupVersion.String()
	crdV1beta1APIVersion = "apiextensions.k8s.io/v1beta1"
)

// decodedDoc is what one document holds.
type decodedDoc struct {
	crds    []CRD
	configs []ctlres.Resource
	err     error
}

// decodeDocs decodes documents in parallel. Identical documents are
// decoded once: the later ones share the CRD objects of the first, with
// their own origins. Documents that failed or hold kapp Config are decoded
// again, for their own error and resources.
func decodeDocs(docs []rawDoc) []decodedDoc {
	results := make([]decodedDoc, len(docs))
	first := make([]int, len(docs)) // index of the first identical document
	byHash := map[uint64][]int{}
	seed := maphash.MakeSeed()
	var unique []int
	for i, d := range docs {
		first[i] = i
		h := maphash.Bytes(seed, d.data)
		for _, j := range byHash[h] {
			if bytes.Equal(docs[j].data, d.data) {
				first[i] = j
				break
			}
		}
		if first[i] == i {
			byHash[h] = append(byHash[h], i)
			unique = append(unique, i)
		}
	}
	decode := func(idx []int) {
		// Decoding errors are kept per document (reported in input order
		// by the caller), so the work itself never fails.
		_ = parallel.ForEach(context.Background(), len(idx), runtime.GOMAXPROCS(0), func(_ context.Context, k int) error {
			i := idx[k]
			r := &results[i]
			r.crds, r.configs, r.err = decodeDoc(docs[i])
			return nil
		})
	}
	decode(unique)

	var again []int
	for i := range docs {
		j := first[i]
		if j == i {
			continue
		}
		if r := results[j]; r.err != nil || len(r.configs) > 0 {
			again = append(again, i)
			continue
		}
		crds := make([]CRD, len(results[j].crds))
		for k, c := range results[j].crds {
			// "<doc origin>" or "<doc origin> item N" of the first document.
			crds[k] = CRD{CRD: c.CRD, Origin: docs[i].origin + strings.TrimPrefix(c.Origin, docs[j].origin), src: docs[i].src}
		}
		results[i].crds = crds
	}
	decode(again)
	for i := range results {
		for k := range results[i].crds {
			results[i].crds[k].src = docs[i].src // findings point at their own document
		}
	}
	return results
}

// docHead is what identifies a document.
type docHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

func decodeDoc(doc rawDoc) ([]CRD, []ctlres.Resource, error) {
	js, asWritten, err := toJSON(doc.data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w: not valid YAML: %w", doc.origin, ErrInvalidInput, err)
	}
	if isJSONNull(js) {
		return nil, nil, nil // empty document, or only comments
	}
	crds, configs, err := decodeObject(js, doc.origin)
	if err != nil && asWritten {
		// kapp reads JSON as YAML, which writes numbers anew: 5.0 and 5e0
		// become 5, which an integer field (maxLength) accepts. Taken as
		// written, they do not: decode the document as kapp sees it.
		if js, yerr := yamlToJSON(doc.data); yerr == nil {
			if crds, configs, yerr := decodeObject(js, doc.origin); yerr == nil {
				return crds, configs, nil
			}
		}
	}
	return crds, configs, err
}

func decodeObject(js []byte, origin string) ([]CRD, []ctlres.Resource, error) {
	// Most documents of a CRD check are CRDs: decode straight into the type
	// and look at its TypeMeta; only on failure look at the head alone.
	crd := &apiextv1.CustomResourceDefinition{}
	crdErr := unmarshal(js, crd)
	head := docHead{APIVersion: crd.APIVersion, Kind: crd.Kind}
	head.Metadata.Name, head.Metadata.Labels = crd.Name, crd.Labels
	if crdErr != nil {
		if kind := jsonKind(js); kind != "object" {
			return nil, nil, fmt.Errorf("%s: %w: expected a YAML object (a Kubernetes resource), got %s", origin, ErrInvalidInput, kind)
		}
		head = docHead{}
		if err := unmarshal(js, &head); err != nil {
			return nil, nil, fmt.Errorf("%s: %w: reading apiVersion, kind and metadata: %w", origin, ErrInvalidInput, err)
		}
	}

	switch {
	case head.Kind == "CustomResourceDefinition" && head.APIVersion == crdV1APIVersion:
		if crdErr != nil {
			if key, ok := numberAnnotation(js); ok {
				return nil, nil, fmt.Errorf("%s: %w: decoding CustomResourceDefinition %s: metadata.annotations[%s] is a number, not a string: "+
					"YAML reads a value written unquoted as a number when it is all digits or digits and one e (a fingerprint such as "+
					"123456789012 or 94583743e021), and its digits cannot be recovered from the number; quote it: %q",
					origin, ErrInvalidInput, head.Metadata.Name, key, key+`: "..."`)
			}
			return nil, nil, fmt.Errorf("%s: %w: decoding CustomResourceDefinition %s: %w", origin, ErrInvalidInput, head.Metadata.Name, crdErr)
		}
		return []CRD{{CRD: crd, Origin: origin}}, nil, nil

	case head.Kind == "CustomResourceDefinition" && head.APIVersion == crdV1beta1APIVersion:
		return nil, nil, fmt.Errorf("%s: %w: CustomResourceDefinition %s is %s, which Kubernetes no longer serves; only %s is supported",
			origin, ErrInvalidInput, head.Metadata.Name, crdV1beta1APIVersion, crdV1APIVersion)

	case head.APIVersion == kappConfigAPIVersion || hasKey(head.Metadata.Labels, kappConfigLabelKey):
		res, err := ctlres.NewResourceFromBytes(js)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w: decoding kapp config: %w", origin, ErrInvalidInput, err)
		}
		res.SetOrigin(origin)
		return nil, []ctlres.Resource{res}, nil

	case strings.HasSuffix(head.Kind, "List"):
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := unmarshal(js, &list); err != nil || list.Items == nil {
			return nil, nil, nil // some other kind named *List, not a list of resources
		}
		var crds []CRD
		var configs []ctlres.Resource
		for i, item := range list.Items {
			c, cf, err := decodeObject(item, fmt.Sprintf("%s item %d", origin, i+1))
			if err != nil {
				return nil, nil, err
			}
			crds, configs = append(crds, c...), append(configs, cf...)
		}
		return crds, configs, nil
	}
	return nil, nil, nil // not a CRD: a CRD check receives whole manifests
}

// numberAnnotation returns the first key, sorted, of the object's
// metadata.annotations whose value is a number (written unquoted in YAML),
// which no annotation may be.
func numberAnnotation(js []byte) (string, bool) {
	var obj struct {
		Metadata struct {
			Annotations map[string]any `json:"annotations"`
		} `json:"metadata"`
	}
	if unmarshal(js, &obj) != nil {
		return "", false
	}
	keys := make([]string, 0, len(obj.Metadata.Annotations))
	for k, v := range obj.Metadata.Annotations {
		switch v.(type) {
		case int64, float64, json.Number:
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "", false
	}
	slices.Sort(keys)
	return keys[0], true
}

// unmarshal decodes JSON as the apiserver does: keys are case-sensitive,
// integers decoded into interface values stay integers.
func unmarshal(js []byte, v any) error {
	return sigsjson.UnmarshalCaseSensitivePreserveInts(js, v)
}

// yamlToJSON converts a YAML document to JSON as sigs.k8s.io/yaml does
// (tests compare it with sigs.k8s.io/yaml.YAMLToJSON itself).
var yamlToJSON = yamljson.ToJSON

// toJSON converts a YAML document to JSON; a document that is JSON already
// is used as is (asWritten).
func toJSON(doc []byte) (js []byte, asWritten bool, err error) {
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
		return trimmed, true, nil
	}
	js, err = yamlToJSON(doc)
	return js, false, err
}

// jsonKind names the type of a JSON value by its first byte.
func jsonKind(js []byte) string {
	t := bytes.TrimSpace(js)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

func isJSONNull(js []byte) bool {
	t := bytes.TrimSpace(js)
	return len(t) == 0 || string(t) == "null"
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
