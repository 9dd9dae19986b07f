package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
)

func TestNullable(t *testing.T) {
	runSchemaCases(t, []schemaCase{
		{name: "nullable removed", old: `{type: string, nullable: true}`, new: `{type: string}`,
			want: []string{"error nullable v1 ^.spec.x: nullable removed: null values are no longer allowed"}},
		{name: "nullable set to false", old: `{type: string, nullable: true}`, new: `{type: string, nullable: false}`,
			want: []string{"error nullable v1 ^.spec.x: nullable removed: null values are no longer allowed"}},
		{name: "nullable added relaxes", old: `{type: string}`, new: `{type: string, nullable: true}`, want: []string{}},
		{name: "nullable toggle off", old: `{type: string, nullable: true}`, new: `{type: string}`,
			config: enginetest.ToggleOff(config.CheckNullable), want: []string{}},
	})
}
