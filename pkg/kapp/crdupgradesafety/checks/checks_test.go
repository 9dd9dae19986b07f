package checks

import (
	"slices"
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
)

// TestEveryPropertyCheckRuns: every property check ID the configuration
// knows is run at every node, by exactly one entry of propertyChecks or by
// the walk itself, and nothing runs under an ID the configuration does not
// know (it could not be tuned or exempted).
func TestEveryPropertyCheckRuns(t *testing.T) {
	runs := map[string]int{}
	for _, c := range propertyChecks {
		for _, id := range c.ids {
			runs[id]++
		}
	}
	for _, id := range walkCheckIDs {
		runs[id]++
	}
	for _, id := range config.PropertyCheckIDs {
		if runs[id] != 1 {
			t.Errorf("property check %q is run %d times (want once: an entry of propertyChecks or walkCheckIDs)", id, runs[id])
		}
	}
	for id := range runs {
		if !slices.Contains(config.PropertyCheckIDs, id) {
			t.Errorf("%q runs as a property check but is not in config.PropertyCheckIDs", id)
		}
	}
}
