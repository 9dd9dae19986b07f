// Package docs ships the documentation the binary quotes: the section of
// checks.md about a check is the help of its SARIF rule, and the JSON
// Schema of the tools command's json output is what its tests validate
// against.
package docs

import _ "embed"

// Checks is checks.md: one section per check ID.
//
//go:embed checks.md
var Checks string

// ReportSchema is the JSON Schema of `kapp tools crd-upgrade-safety
// --output json`.
//
//go:embed crd-upgrade-safety-report.schema.json
var ReportSchema string
