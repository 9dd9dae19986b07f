package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of nullable: nullable: true removed.
var _ = propertyCheckOf(48, finding.Register(finding.Descriptor{IDs: []string{config.CheckNullable}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkNullable)

// checkNullable: removing nullable: true rejects stored nulls.
func checkNullable(n *node) {
	// nullable's tightening direction is true -> false: swap the arguments.
	turnedOn(n, config.CheckNullable, &n.new.Nullable, &n.old.Nullable, "nullable removed: null values are no longer allowed")
}
