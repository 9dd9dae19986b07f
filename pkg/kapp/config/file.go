package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	yamlv3 "go.yaml.in/yaml/v3"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// A settings file holds the check's settings alone: the `config` of a
// CRDUpgradeSafety preflightRules entry (mode, failMode, checks, exemptions,
// ...) as one YAML or JSON map. KAPP_CRD_UPGRADE_SAFETY_CONFIG names one for
// every deploy, and `kapp tools crd-upgrade-safety-webhook --config` one for
// the webhook.

// ReadFile reads and decodes the settings file at path: the decoded
// settings and the raw map (for a caller that hands it on, as kapp's
// registry does). Errors name the file; invalid settings also wrap
// ErrInvalidConfig.
func ReadFile(path string) (Settings, map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, nil, fmt.Errorf("file %s: %w", path, err)
	}
	raw, err := ParseFile(data)
	if err != nil {
		return Settings{}, nil, fmt.Errorf("file %s: %w", path, err)
	}
	cfg, err := Decode(raw)
	if err != nil {
		return Settings{}, nil, fmt.Errorf("file %s: %w", path, err)
	}
	return cfg, raw, nil
}

// ParseFile parses the content of a settings file into the map Decode
// takes. An empty file, or one of comments only, is an empty map: the
// defaults. More than one document, anything but a map, or a Kubernetes
// object (a whole kapp Config) is an error.
func ParseFile(data []byte) (map[string]any, error) {
	var doc any
	docs := 0
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML: %w", err)
		}
		var v any
		if err := yaml.Unmarshal(chunk, &v); err != nil {
			return nil, fmt.Errorf("not YAML: %w", err)
		}
		if v == nil { // empty, or comments only
			continue
		}
		if m, isMap := v.(map[string]any); isMap {
			restoreFingerprints(chunk, m)
		}
		if docs++; docs > 1 {
			return nil, errors.New("holds more than one YAML document; it holds one map, the settings of the check")
		}
		doc = v
	}
	if doc == nil {
		return map[string]any{}, nil
	}
	m, isMap := doc.(map[string]any)
	if !isMap {
		return nil, fmt.Errorf("must be a YAML map of the check's settings (mode, failMode, checks, ...), got %s", jsonTypeName(doc))
	}
	if _, hasKind := m["kind"]; hasKind {
		return nil, errors.New("holds a Kubernetes object (it has a kind), not the check's settings: write only the `config` of the CRDUpgradeSafety preflightRules entry (mode, failMode, checks, ...)")
	}
	return m, nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// restoreFingerprints puts back the text of every waiver fingerprint
// (waivers[].fingerprint, exemptions[].fingerprint) that was written
// unquoted and so decoded as a number (123456789012, 94583743e021,
// 001234567012 read as octal): the YAML node of the scalar keeps the
// text as written. Decode rejects a fingerprint that is still a number
// (a kapp Config's settings reach it already decoded, without the text).
func restoreFingerprints(chunk []byte, m map[string]any) {
	var root yamlv3.Node
	if yamlv3.Unmarshal(chunk, &root) != nil || root.Kind != yamlv3.DocumentNode || len(root.Content) != 1 {
		return
	}
	for _, key := range []string{"waivers", "exemptions"} {
		items, isList := m[key].([]any)
		seq := mappingValue(root.Content[0], key)
		if !isList || seq == nil || seq.Kind != yamlv3.SequenceNode || len(seq.Content) != len(items) {
			continue
		}
		for i, item := range items {
			w, isMap := item.(map[string]any)
			if !isMap {
				continue
			}
			if _, isStr := w["fingerprint"].(string); isStr || w["fingerprint"] == nil {
				continue
			}
			if n := mappingValue(seq.Content[i], "fingerprint"); n != nil && n.Kind == yamlv3.ScalarNode && n.Style == 0 {
				w["fingerprint"] = n.Value
			}
		}
	}
}

// mappingValue is the value node of key in the mapping node n, nil when
// n is not a mapping or has no such key.
func mappingValue(n *yamlv3.Node, key string) *yamlv3.Node {
	if n == nil || n.Kind != yamlv3.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
