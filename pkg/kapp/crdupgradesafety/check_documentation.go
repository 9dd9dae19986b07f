package crdupgradesafety

// checkDocumentation clears keywords that only document a schema: changing
// them is never a finding.
func checkDocumentation(n *node) {
	n.old.Description, n.new.Description = "", ""
	n.old.Title, n.new.Title = "", ""
	n.old.Example, n.new.Example = nil, nil
	n.old.ExternalDocs, n.new.ExternalDocs = nil, nil
}
