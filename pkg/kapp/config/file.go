package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

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
