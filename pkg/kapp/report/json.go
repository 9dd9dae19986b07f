package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSON renders the report as the json output's document, whose schema is
// docs/crd-upgrade-safety-report.schema.json (documented in docs/ci.md).
// Messages are kept in full.
func JSON(r Report) ([]byte, error) {
	out, err := marshalIndent(r)
	if err != nil {
		return nil, fmt.Errorf("encoding the report: %w", err)
	}
	return out, nil
}

// marshalIndent encodes v indented, ending with a newline, and leaves
// '<', '>' and '&' as they are (messages hold "20 -> 5", CEL's "&&").
func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
