package checks

// checkDocumentation runs first at every node: it reports nothing and
// clears what is never a finding.
var _ = propertyCheckOf(10, nil, checkDocumentation)

// checkDocumentation clears keywords that only document a schema, and those
// the apiserver ignores for the schema's type (clearIgnoredKeywords, while
// the types are still there: checkType clears them): changing them is
// never a finding.
func checkDocumentation(n *node) {
	clearIgnoredKeywords(n)
	n.old.Description, n.new.Description = "", ""
	n.old.Title, n.new.Title = "", ""
	n.old.Example, n.new.Example = nil, nil
	n.old.ExternalDocs, n.new.ExternalDocs = nil, nil
}
