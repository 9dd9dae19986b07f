package checks

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkUniqueItems: requiring unique items rejects lists with duplicates.
func checkUniqueItems(n *node) {
	turnedOn(n, config.CheckUniqueItems, &n.old.UniqueItems, &n.new.UniqueItems, "uniqueItems set: lists with duplicate items are no longer allowed")
}
