package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of uniqueItems: set to true.
var _ = propertyCheckOf(46, finding.Register(finding.Descriptor{IDs: []string{config.CheckUniqueItems}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkUniqueItems)

// checkUniqueItems: requiring unique items rejects lists with duplicates.
func checkUniqueItems(n *node) {
	turnedOn(n, config.CheckUniqueItems, &n.old.UniqueItems, &n.new.UniqueItems, "uniqueItems set: lists with duplicate items are no longer allowed")
}
