package checks

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestCRDCheckOrder: the checks of CompareWith, placed from their own files
// (crdCheckOf), run in the order Compare has always run them, each once.
func TestCRDCheckOrder(t *testing.T) {
	want := []string{"checkScope", "checkStoredVersionRemoval", "checkServedVersionRemoval", "checkVersionLifecycle",
		"checkSubresources", "checkSelectableFields", "checkCRDPreserveUnknownFields", "checkSameVersions",
		"checkServedVersions", "checkStoragePruning"}
	var got []string
	orders := map[int]bool{}
	for _, c := range crdChecks {
		name := runtime.FuncForPC(reflect.ValueOf(c.run).Pointer()).Name()
		got = append(got, name[strings.LastIndex(name, ".")+1:])
		if orders[c.order] {
			t.Errorf("two CRD-level checks at order %d", c.order)
		}
		orders[c.order] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CompareWith runs\n%v\nwant\n%v", got, want)
	}
}
