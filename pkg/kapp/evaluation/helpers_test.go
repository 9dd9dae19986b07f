package evaluation

import "github.com/crdsafety/kapp/pkg/kapp/internal/testcrd"

// The Widget CRD on the cluster and a safe update of it.
var (
	oldCRD  = testcrd.OldCRD
	safeCRD = testcrd.SafeCRD
	mustCRD = testcrd.MustCRD
)
