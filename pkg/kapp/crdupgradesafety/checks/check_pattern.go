package checks

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/relang"
)

// The descriptor of pattern: a pattern added, or changed to reject what it accepted.
var _ = propertyCheckOf(47, finding.Register(finding.Descriptor{IDs: []string{config.CheckPattern}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarns}), checkPattern)

// checkPattern: a pattern added or changed is unsafe only when some string
// the old schema accepted is rejected by the new pattern. The two regular
// languages are compared the way the apiserver evaluates them (Go regexp,
// matching anywhere unless anchored; an absent pattern accepts every
// string) and the finding names a shortest string no longer accepted. When
// the comparison reaches its bound, or a pattern does not compile, the
// change is reported without a witness. Removing the pattern relaxes.
func checkPattern(n *node) {
	o, nw, ok := takeString(n, config.CheckPattern, &n.old.Pattern, &n.new.Pattern)
	if !ok {
		return
	}
	change := fmt.Sprintf("pattern %s: %s -> %s", addedOrChanged(o), finding.RenderString(o), finding.RenderString(nw))
	fact := finding.Change{Kind: addedOrChanged(o), Old: o, New: nw}
	res, err := ComparePatterns(o, nw)
	switch {
	case err != nil:
		n.report(config.CheckPattern, fact, "%s (not proven safe: %v)", change, err)
	case res.Verdict == relang.Included:
	case res.Verdict == relang.NotIncluded:
		n.report(config.CheckPattern, fact, "%s: %s no longer accepted", change, renderWitness(res.Witness))
	default:
		n.report(config.CheckPattern, fact, "%s (not proven safe: the comparison stopped at its bound of %d states)", change, relang.DefaultMaxStates)
	}
}

// takeString clears a string keyword on both sides and returns its old
// and new values; ok when the new one is set, differs from the old one and
// the check is enabled (removing the keyword relaxes).
func takeString(n *node, id string, o, nw *string) (oldV, newV string, ok bool) {
	oldV, newV = *o, *nw
	*o, *nw = "", ""
	return oldV, newV, newV != "" && oldV != newV && n.run.vc.ToggleEnabled(id)
}

// addedOrChanged is the verb of a keyword's change from old.
func addedOrChanged(old string) string {
	if old == "" {
		return "added"
	}
	return "changed"
}

// comparePatterns decides whether every string pattern old accepts is
// accepted by new ("" is no pattern: every string).
func ComparePatterns(old, new string) (relang.Result, error) {
	ol, err := relang.Compile(old)
	if err != nil {
		return relang.Result{}, err
	}
	nl, err := relang.Compile(new)
	if err != nil {
		return relang.Result{}, err
	}
	return relang.Includes(ol, nl, 0), nil
}

// renderWitness quotes a witness string, shortened when it is long (a
// counted repetition's bound can need hundreds of characters).
func renderWitness(w string) string {
	const maxRunes = 80
	n := utf8.RuneCountInString(w)
	if n <= maxRunes {
		return strconv.Quote(w)
	}
	head := []rune(w)[:maxRunes/2]
	return fmt.Sprintf("%s... (%d characters)", strconv.Quote(string(head)), n)
}
