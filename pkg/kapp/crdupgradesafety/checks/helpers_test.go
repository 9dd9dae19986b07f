package checks

import (
	"testing"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/internal/enginetest"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// schemaCase is one row of a property check's table: an old and a new
// schema of the field ^.spec.x (YAML), an optional config change, and the
// findings expected as "check field: message" lines.
type schemaCase struct {
	name     string
	old, new string
	config   func(*config.Settings)
	want     []string
}

func runSchemaCases(t *testing.T, cases []schemaCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertFindings(t, enginetest.CRDWithField(t, tc.old), enginetest.CRDWithField(t, tc.new), tc.config, tc.want)
		})
	}
}

// assertFindings compares old with new under the default config changed by
// configure (when set) and checks the rendered findings are want.
func assertFindings(t *testing.T, old, new *apiextv1.CustomResourceDefinition, configure func(*config.Settings), want []string) {
	t.Helper()
	cfg := config.Default()
	if configure != nil {
		configure(&cfg)
	}
	if got := enginetest.Render(Compare(old, new, &cfg)); !enginetest.EqualLines(got, want) {
		t.Fatalf("findings differ\n got: %q\nwant: %q", got, want)
	}
}
