package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindingFacts(t *testing.T) {
	cases := []struct {
		name  string
		facts FindingFacts
		field string
	}{
		{name: "schema finding", facts: FindingFacts{Fingerprint: "ed63ac23ebcd", Check: CheckEnum, Version: "v1", Field: "^.spec.color"},
			field: `{"fp":"ed63ac23ebcd","check":"enum","version":"v1","field":"^.spec.color"}`},
		{name: "served version pair", facts: FindingFacts{Fingerprint: "0123456789ab", Check: CheckServedVersion, Version: "v1", PairVersion: "v2", Field: "^.spec.a"},
			field: `{"fp":"0123456789ab","check":"servedVersion","version":"v1","pair":"v2","field":"^.spec.a"}`},
		{name: "crd level: short", facts: FindingFacts{Fingerprint: "4c33d9f70470", Check: CheckCRDDeletion},
			field: `{"fp":"4c33d9f70470","check":"crdDeletion"}`},
		{name: "path with JSON's own characters", facts: FindingFacts{Fingerprint: "aaaaaaaaaaaa", Check: CheckType, Version: "v1", Field: `^.spec["a\"b"]`},
			field: `{"fp":"aaaaaaaaaaaa","check":"type","version":"v1","field":"^.spec[\"a\\\"b\"]"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.field, tc.facts.CauseField())
			require.Equal(t, tc.facts, ParseFindingFacts(tc.field))
		})
	}
	t.Run("a bare fingerprint, as webhooks before the facts sent it", func(t *testing.T) {
		require.Equal(t, FindingFacts{Fingerprint: "ed63ac23ebcd"}, ParseFindingFacts("ed63ac23ebcd"))
	})
	t.Run("not JSON after all: the field as a fingerprint", func(t *testing.T) {
		require.Equal(t, FindingFacts{Fingerprint: "{x"}, ParseFindingFacts("{x"))
	})
}
