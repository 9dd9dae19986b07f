package crdupgradesafety

import (
	// Every room's check descriptors (finding.Register in each check's
	// file): whoever imports the engine's front has them all.
	_ "github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/apivalidation"
	_ "github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/checks"
	_ "github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/objects"
)
