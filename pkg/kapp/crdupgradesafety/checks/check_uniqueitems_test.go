package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

func TestUniqueItems(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "uniqueItems set", old: `{type: array, items: {type: string}}`, new: `{type: array, uniqueItems: true, items: {type: string}}`,
			want: []string{"error uniqueItems v1 ^.spec.x: uniqueItems set: lists with duplicate items are no longer allowed"}},
		{name: "uniqueItems unset relaxes", old: `{type: array, uniqueItems: true, items: {type: string}}`, new: `{type: array, items: {type: string}}`, want: []string{}},
		{name: "uniqueItems toggle off", old: `{type: array, items: {type: string}}`, new: `{type: array, uniqueItems: true, items: {type: string}}`,
			config: enginetest.ToggleOff(config.CheckUniqueItems), want: []string{}},
	})
}
