package inputs

import (
	"fmt"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Object is a custom resource of the inputs (--objects): a sample of what
// a cluster stores, with where it came from.
type Object struct {
	Object map[string]any
	// Origin names the document in errors and notes.
	Origin string
}

// LoadObjects reads files and directories of custom resources (a
// kubebuilder project's config/samples/, say) as `kapp deploy -f` reads
// files: every document must be an object with apiVersion, kind and
// metadata.name; a List's items are taken one by one. CRDs and kapp
// Configs among them are skipped.
func LoadObjects(files []string) ([]Object, error) {
	docs, err := readFiles(files)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, doc := range docs {
		js, _, err := toJSON(doc.data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: not valid YAML: %w", doc.origin, ErrInvalidInput, err)
		}
		if isJSONNull(js) {
			continue
		}
		var obj map[string]any
		// Numbers as the apiserver decodes them: int64 where integral.
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			return nil, fmt.Errorf("%s: %w: a custom resource must be an object: %w", doc.origin, ErrInvalidInput, err)
		}
		objs := []map[string]any{obj}
		origins := []string{doc.origin}
		if kind, _ := obj["kind"].(string); strings.HasSuffix(kind, "List") && obj["items"] != nil {
			items, ok := obj["items"].([]any)
			if !ok {
				return nil, fmt.Errorf("%s: %w: items of %s must be a list", doc.origin, ErrInvalidInput, kind)
			}
			objs, origins = nil, nil
			for i, item := range items {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s item %d: %w: a custom resource must be an object", doc.origin, i+1, ErrInvalidInput)
				}
				objs = append(objs, m)
				origins = append(origins, fmt.Sprintf("%s item %d", doc.origin, i+1))
			}
		}
		for i, o := range objs {
			if err := checkObject(o); err != nil {
				return nil, fmt.Errorf("%s: %w: %w", origins[i], ErrInvalidInput, err)
			}
			if apiVersion, _ := o["apiVersion"].(string); strings.HasPrefix(apiVersion, "apiextensions.k8s.io/") ||
				strings.HasPrefix(apiVersion, "kapp.k14s.io/") {
				continue
			}
			out = append(out, Object{Object: o, Origin: origins[i]})
		}
	}
	return out, nil
}

// checkObject says what a custom resource lacks.
func checkObject(o map[string]any) error {
	apiVersion, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if kind == "" {
		missing = append(missing, "kind")
	}
	if name == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) > 0 {
		return fmt.Errorf("a custom resource needs %s", strings.Join(missing, ", "))
	}
	return nil
}
