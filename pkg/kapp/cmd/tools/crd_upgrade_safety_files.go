package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ctlres "carvel.dev/kapp/pkg/kapp/resources"
	"github.com/crdsafety/kapp/pkg/kapp/internal/yamljson"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	sigsjson "sigs.k8s.io/json"
)

// Inputs of `kapp tools crd-upgrade-safety`: YAML or JSON files, dirs, URLs
// or stdin, as `kapp deploy -f` takes them. Every document is read once:
// YAML is converted to JSON and decoded straight into the typed CRD (no
// intermediate map); documents are decoded in parallel, identical ones
// once (decode.go).
//
// JSON is decoded as the apiserver decodes it (sigs.k8s.io/json): keys
// match case-sensitively, so "MAXLENGTH" or "maxlength" is an unknown field
// the apiserver drops, not a second spelling of maxLength. This is also
// what a deploy judges: kapp reads its files into unstructured objects and
// our check converts them to typed CRDs with case-sensitive keys.

var (
	// ErrInvalidInput is wrapped by every error about the input documents
	// (not YAML, undecodable or invalid CRD, duplicate CRD name).
	ErrInvalidInput = errors.New("invalid input")

	fileExts = []string{".json", ".yaml", ".yml"} // as kapp and kubectl

	kappConfigAPIVersion = "kapp.k14s.io/v1alpha1"
	kappConfigLabelKey   = "kapp.k14s.io/config"
	crdV1APIVersion      = apiextv1.SchemeGroupVersion.String()
	crdV1beta1APIVersion = "apiextensions.k8s.io/v1beta1"
)

// crdDoc is one CRD with where it came from.
type crdDoc struct {
	crd    *apiextv1.CustomResourceDefinition
	origin string    // "file 'crds/a.yaml' doc 2"
	src    docSource // for the file and line of findings
}

// inputSet is what a set of files holds: CRDs (in input order) and kapp
// Config resources (documents of kapp's config apiVersion or ConfigMaps
// labeled as kapp config).
type inputSet struct {
	crds    []crdDoc
	configs []ctlres.Resource
}

type rawDoc struct {
	origin string
	data   []byte
	src    docSource
}

// docBytes is the size of docs.
func docBytes(docs []rawDoc) int {
	n := 0
	for _, d := range docs {
		n += len(d.data)
	}
	return n
}

// loadInputs reads files (in order) and decodes their documents. Duplicate
// CRD names are errors; which names "old" or "new" in the error. Whether the
// apiserver would accept the CRDs is the apiserverRejects check's question,
// not an input error.
func loadInputs(files []string, which string) (inputSet, error) {
	docs, err := readFiles(files)
	if err != nil {
		return inputSet{}, err
	}
	return assembleInputs(decodeDocs(docs), which)
}

// readFiles reads files (in order) and splits them into documents.
func readFiles(files []string) ([]rawDoc, error) {
	var srcs []ctlres.FileSource
	for _, file := range files {
		s, err := fileSources(file)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s...)
	}
	return readDocs(srcs)
}

// loadSources is loadInputs of sources already listed.
func loadSources(srcs []ctlres.FileSource, which string) (inputSet, error) {
	docs, err := readDocs(srcs)
	if err != nil {
		return inputSet{}, err
	}
	return assembleInputs(decodeDocs(docs), which)
}

// assembleInputs collects the decoded documents of one side, in input
// order: the first decoding error, or the set; a duplicate CRD name is an
// error naming both documents.
func assembleInputs(results []decodedDoc, which string) (inputSet, error) {
	var set inputSet
	seen := map[string]string{}
	for _, r := range results {
		if r.err != nil {
			return inputSet{}, r.err
		}
		for _, c := range r.crds {
			if prev, dup := seen[c.crd.Name]; dup {
				return inputSet{}, fmt.Errorf("%w: duplicate CustomResourceDefinition %s in %s files: %s and %s",
					ErrInvalidInput, c.crd.Name, which, prev, c.origin)
			}
			seen[c.crd.Name] = c.origin
			set.crds = append(set.crds, c)
		}
		set.configs = append(set.configs, r.configs...)
	}
	return set, nil
}

// fileSources expands one --file/--file2 value like kapp does: "-" is
// stdin, http(s) URLs are fetched, directories are walked recursively for
// .json/.yaml/.yml files in sorted order. Paths keep their directory so
// errors name the real file.
func fileSources(file string) ([]ctlres.FileSource, error) {
	switch {
	case file == "-":
		return []ctlres.FileSource{ctlres.NewStdinSource()}, nil
	case strings.HasPrefix(file, "http://") || strings.HasPrefix(file, "https://"):
		return []ctlres.FileSource{pathSource{FileSource: ctlres.NewHTTPFileSource(file), path: file}}, nil
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("reading file '%s': %w", file, err)
	}
	if !info.IsDir() {
		return []ctlres.FileSource{localSource(file)}, nil
	}
	var paths []string
	err = filepath.WalkDir(file, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, ext := range fileExts {
			if filepath.Ext(path) == ext {
				paths = append(paths, path)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing directory '%s': %w", file, err)
	}
	sort.Strings(paths)
	srcs := make([]ctlres.FileSource, len(paths))
	for i, p := range paths {
		srcs[i] = localSource(p)
	}
	return srcs, nil
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

func decodeDoc(doc rawDoc) ([]crdDoc, []ctlres.Resource, error) {
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

func decodeObject(js []byte, origin string) ([]crdDoc, []ctlres.Resource, error) {
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
			return nil, nil, fmt.Errorf("%s: %w: decoding CustomResourceDefinition %s: %w", origin, ErrInvalidInput, head.Metadata.Name, crdErr)
		}
		return []crdDoc{{crd: crd, origin: origin}}, nil, nil

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
		var crds []crdDoc
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
