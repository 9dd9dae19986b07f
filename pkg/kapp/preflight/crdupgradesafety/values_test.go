package crdupgradesafety

import "testing"

func TestCanonicalJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `null`},
		{` null `, `null`},
		{`1.0`, `1`},
		{`1e2`, `100`},
		{`-0.50`, `-0.5`},
		{`12345678901234567890`, `12345678901234567890`},
		{`{"b": 1.0, "a": [2.50, "x"]}`, `{"a":[2.5,"x"],"b":1}`},
		{`"a"`, `"a"`},
		{`not json`, `not json`},
	}
	for _, tc := range cases {
		if got := canonicalJSON([]byte(tc.in)); got != tc.want {
			t.Errorf("canonicalJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
