package checks

import (
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
)

// The descriptor of mapType: x-kubernetes-map-type changed.
var _ = propertyCheckOf(51, finding.Register(finding.Descriptor{IDs: []string{config.CheckMapType}, Runs: finding.RunsOnProperty, Remedy: finding.RemedyNewVersion}), checkMapType)

// checkMapType: x-kubernetes-map-type decides server-side apply ownership
// of map entries and nothing else: no stored object becomes invalid. An
// absent map type means granular. Reported at changeEnforcement (Warn by
// default).
func checkMapType(n *node) {
	o, nw := orDefault(n.old.XMapType, "granular"), orDefault(n.new.XMapType, "granular")
	n.old.XMapType, n.new.XMapType = nil, nil
	if c := n.run.vc.MapType; o != nw && c.Enabled {
		n.reportAt(c.ChangeEnforcement, config.CheckMapType, finding.Change{Kind: "changed", Old: o, New: nw},
			"x-kubernetes-map-type changed: %s -> %s: no stored object becomes invalid, only server-side apply ownership changes", o, nw)
	}
}
