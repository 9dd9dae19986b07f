package crdupgradesafety

import "github.com/crdsafety/kapp/pkg/kapp/config"

// checkPattern: a pattern added or changed may reject strings the old one
// accepted; whether one regular language contains another is not decided
// here, so every change is reported. Removing the pattern relaxes.
func checkPattern(n *node) {
	changedString(n, config.CheckPattern, &n.old.Pattern, &n.new.Pattern)
}

// checkFormat: a format added or changed may reject values that were valid.
func checkFormat(n *node) {
	changedString(n, config.CheckFormat, &n.old.Format, &n.new.Format)
}

// changedString clears a string keyword and reports it when it was added or
// changed; removal relaxes.
func changedString(n *node, id string, o, nw *string) {
	oldV, newV := *o, *nw
	*o, *nw = "", ""
	if newV == "" || oldV == newV || !n.run.vc.ToggleEnabled(id) {
		return
	}
	verb := "changed"
	if oldV == "" {
		verb = "added"
	}
	n.report(id, "%s %s: %s -> %s", id, verb, renderString(oldV), renderString(newV))
}
