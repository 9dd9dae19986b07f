package checks

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkNullable: removing nullable: true rejects stored nulls.
func checkNullable(n *node) {
	// nullable's tightening direction is true -> false: swap the arguments.
	turnedOn(n, config.CheckNullable, &n.new.Nullable, &n.old.Nullable, "nullable removed: null values are no longer allowed")
}
