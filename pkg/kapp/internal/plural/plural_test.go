package plural

import "testing"

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n          int
		of, counts string
	}{
		{0, "findings", "0 findings"},
		{1, "finding", "1 finding"},
		{2, "findings", "2 findings"},
		{-1, "findings", "-1 findings"},
	} {
		if got := Of(tc.n, "finding", "findings"); got != tc.of {
			t.Errorf("Of(%d) = %q, want %q", tc.n, got, tc.of)
		}
		if got := Count(tc.n, "finding", "findings"); got != tc.counts {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.counts)
		}
	}
}
