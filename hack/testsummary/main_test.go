package main

import (
	"bytes"
	"strings"
	"testing"
)

// events is the go test -json output of a package with a passing, a
// failing and a skipped test (and a skipped subtest), and of a package
// without tests, with a script's own line in between.
const events = `{"Action":"start","Package":"example.com/a"}
{"Action":"run","Package":"example.com/a","Test":"TestPass"}
{"Action":"output","Package":"example.com/a","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"example.com/a","Test":"TestPass","Output":"--- PASS: TestPass (0.00s)\n"}
{"Action":"pass","Package":"example.com/a","Test":"TestPass","Elapsed":0}
{"Action":"run","Package":"example.com/a","Test":"TestFail"}
{"Action":"output","Package":"example.com/a","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"example.com/a","Test":"TestFail","Output":"    a_test.go:9: want 1, got 2\n"}
{"Action":"output","Package":"example.com/a","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"example.com/a","Test":"TestFail","Elapsed":0}
{"Action":"run","Package":"example.com/a","Test":"TestKappController"}
{"Action":"output","Package":"example.com/a","Test":"TestKappController","Output":"=== RUN   TestKappController\n"}
{"Action":"output","Package":"example.com/a","Test":"TestKappController","Output":"    kappctrl_test.go:30: kapp-controller is not running:\n"}
{"Action":"output","Package":"example.com/a","Test":"TestKappController","Output":"    kappctrl_test.go:30: start it with hack/test-e2e.sh --kapp-controller\n"}
{"Action":"output","Package":"example.com/a","Test":"TestKappController","Output":"--- SKIP: TestKappController (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestKappController","Elapsed":0}
{"Action":"run","Package":"example.com/a","Test":"TestT/sub"}
{"Action":"output","Package":"example.com/a","Test":"TestT/sub","Output":"    --- SKIP: TestT/sub (0.00s)\n"}
{"Action":"skip","Package":"example.com/a","Test":"TestT/sub","Elapsed":0}
{"Action":"output","Package":"example.com/a","Output":"FAIL\n"}
{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t0.012s\n"}
{"Action":"fail","Package":"example.com/a","Elapsed":0.012}
==> a line of the script around go test
{"Action":"output","Package":"example.com/b","Output":"?   \texample.com/b\t[no test files]\n"}
{"Action":"skip","Package":"example.com/b","Elapsed":0}
`

func TestSummary(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	if err := s.read(strings.NewReader(events)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	want := `=== RUN   TestFail
    a_test.go:9: want 1, got 2
--- FAIL: TestFail (0.00s)
FAIL
FAIL	example.com/a	0.012s
==> a line of the script around go test
?   	example.com/b	[no test files]
tests: 1 passed, 1 failed, 2 skipped; 1 package failed
skipped:
  example.com/a TestKappController: kappctrl_test.go:30: kapp-controller is not running: kappctrl_test.go:30: start it with hack/test-e2e.sh --kapp-controller
  example.com/a TestT/sub
`
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if s.failed != 1 || s.pkgsFailed != 1 {
		t.Errorf("failures not counted: %d tests, %d packages", s.failed, s.pkgsFailed)
	}
}

func TestSummaryPassing(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	in := `{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	if want := "ok  \tp\t0.1s\ntests: 1 passed, 0 failed, 0 skipped\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if s.failed != 0 || s.pkgsFailed != 0 || s.buildFailed {
		t.Error("a passing run counted as failing")
	}
}

// TestSummaryBuildFailure: a package that does not build fails the run.
func TestSummaryBuildFailure(t *testing.T) {
	var out bytes.Buffer
	s := newSummary(&out)
	in := `{"ImportPath":"p [p.test]","Action":"build-output","Output":"# p [p.test]\n"}
{"ImportPath":"p [p.test]","Action":"build-output","Output":"p.go:3:1: undefined: x\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p"}
`
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	want := "# p [p.test]\np.go:3:1: undefined: x\nFAIL\tp [build failed]\ntests: 0 passed, 0 failed, 0 skipped; 1 package failed\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	if !s.buildFailed || s.pkgsFailed != 1 {
		t.Error("the build failure is not counted")
	}
}
