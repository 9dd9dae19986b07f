package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of listType: list type or map keys changed; a change of the keys clients merge by is client-facing.
var _ = propertyCheckOf(50, finding.Register(finding.Descriptor{IDs: []string{config.CheckListType}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyFixObjectsFirst, Unaffected: finding.UnaffectedWarnsUnlessClientFacing}), checkListType)

// checkListType: x-kubernetes-list-type and x-kubernetes-list-map-keys
// decide item uniqueness and server-side apply ownership. An absent list
// type means atomic. A change that adds uniqueness (atomic -> set or map,
// set -> map, map keys changed) may invalidate stored lists: reported at
// uniquenessEnforcement (Strict by default). A change that only coarsens
// ownership (set or map -> atomic, map -> set) invalidates no stored list:
// reported at coarseningEnforcement (Warn by default).
func checkListType(n *node) {
	o, nw := orDefault(n.old.XListType, "atomic"), orDefault(n.new.XListType, "atomic")
	ok, nk := n.old.XListMapKeys, n.new.XListMapKeys
	n.old.XListType, n.new.XListType = nil, nil
	n.old.XListMapKeys, n.new.XListMapKeys = nil, nil
	c := n.run.vc.ListType
	if !c.Enabled {
		return
	}
	switch {
	case o == nw && (nw != "map" || sameSet(ok, nk)):
	case o == nw:
		mergeKeysChanged(n, c.UniquenessEnforcement, finding.Change{Kind: "mapKeys", Old: finding.FactSet(ok), New: finding.FactSet(nk)}, fmt.Sprintf(
			"x-kubernetes-list-map-keys changed: [%s] -> [%s]: stored lists may hold items that are not unique by the new keys",
			strings.Join(ok, ", "), strings.Join(nk, ", ")))
	case nw == "atomic" || o == "map" && nw == "set":
		n.reportAt(c.CoarseningEnforcement, config.CheckListType, finding.Change{Kind: "listType", Old: o, New: nw},
			"x-kubernetes-list-type changed: %s -> %s: no stored list becomes invalid, only server-side apply ownership becomes coarser", o, nw)
	case nw == "map":
		mergeKeysChanged(n, c.UniquenessEnforcement, finding.Change{Kind: "listType", Old: o, New: nw + finding.FactSet(nk)}, fmt.Sprintf(
			"x-kubernetes-list-type changed: %s -> %s: stored lists with duplicate items become invalid", o, nw))
	default:
		n.reportAt(c.UniquenessEnforcement, config.CheckListType, finding.Change{Kind: "listType", Old: o, New: nw},
			"x-kubernetes-list-type changed: %s -> %s: stored lists with duplicate items become invalid", o, nw)
	}
}

// mergeKeysChanged reports a change of the keys server-side apply merges
// a list by (the list-map-keys, or a list that becomes a map): its
// clients break whatever the stored objects hold.
func mergeKeysChanged(n *node, level config.Enforcement, fact finding.Change, msg string) {
	if level.Reports() {
		n.emit(finding.Draft{Field: n.path, Level: level, Check: config.CheckListType, Fact: fact, Message: msg, ClientFacing: true,
			Remedy: &finding.Remedy{Action: finding.RemedyKeepClientFacing}})
	}
}

func orDefault(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
