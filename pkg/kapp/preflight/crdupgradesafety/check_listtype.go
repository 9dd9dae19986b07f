package crdupgradesafety

import (
	"slices"
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// checkListType: x-kubernetes-list-type and x-kubernetes-list-map-keys
// decide server-side apply ownership and item uniqueness; any change of
// meaning is reported. An absent list type means atomic.
func checkListType(n *node) {
	o, nw := orDefault(n.old.XListType, "atomic"), orDefault(n.new.XListType, "atomic")
	ok, nk := n.old.XListMapKeys, n.new.XListMapKeys
	n.old.XListType, n.new.XListType = nil, nil
	n.old.XListMapKeys, n.new.XListMapKeys = nil, nil
	if !n.run.vc.ToggleEnabled(config.CheckListType) {
		return
	}
	if o != nw {
		n.report(config.CheckListType, "x-kubernetes-list-type changed: %s -> %s", o, nw)
		return
	}
	if nw == "map" && !sameSet(ok, nk) {
		n.report(config.CheckListType, "x-kubernetes-list-map-keys changed: [%s] -> [%s]", strings.Join(ok, ", "), strings.Join(nk, ", "))
	}
}

// checkMapType: x-kubernetes-map-type decides server-side apply ownership
// of map entries. An absent map type means granular.
func checkMapType(n *node) {
	o, nw := orDefault(n.old.XMapType, "granular"), orDefault(n.new.XMapType, "granular")
	n.old.XMapType, n.new.XMapType = nil, nil
	if o != nw && n.run.vc.ToggleEnabled(config.CheckMapType) {
		n.report(config.CheckMapType, "x-kubernetes-map-type changed: %s -> %s", o, nw)
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
