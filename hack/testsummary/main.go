// Command testsummary reads `go test -json` on standard input and prints
// what `go test` prints without -v (a line per package, the output of the
// tests that failed), then how many tests passed, failed and were skipped,
// and each skipped test with its reason: a skip is never silent. Lines that
// are not test2json events (a script's own output) are passed through.
//
// Usage: go test -json ./... | testsummary [-skipped FILE]
//
// -skipped appends the skipped tests to FILE too (hack/test.sh lists those
// of all its sections at the end). The exit status is 1 when a test or a
// build failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

func main() {
	skippedFile := flag.String("skipped", "", "append the skipped tests to this file")
	flag.Parse()
	s := newSummary(os.Stdout)
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(1)
	}
	s.finish()
	if *skippedFile != "" && len(s.skips) > 0 {
		f, err := os.OpenFile(*skippedFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = io.WriteString(f, s.skipList())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
			os.Exit(1)
		}
	}
	if s.failed > 0 || s.pkgsFailed > 0 || s.buildFailed {
		os.Exit(1)
	}
}

// event is a test2json event (go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events
}

type skip struct{ pkg, test, reason string }

type summary struct {
	out            io.Writer
	output         map[string][]string // per package and test: its output so far
	passed, failed int
	skips          []skip
	pkgsFailed     int
	buildFailed    bool
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, output: map[string][]string{}}
}

func (s *summary) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1024*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			fmt.Fprintln(s.out, line)
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output)
	case e.Action == "build-fail":
		s.buildFailed = true
	case e.Test == "":
		// Package-level: "ok  pkg 1.2s", "FAIL pkg", "? pkg [no test
		// files]", a panic outside any test; not the bare "PASS".
		if e.Action == "output" && e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
			fmt.Fprint(s.out, e.Output)
		}
		if e.Action == "fail" {
			s.pkgsFailed++ // also a build failure, a panic or TestMain failing outside any test
		}
	case e.Action == "output":
		s.output[key] = append(s.output[key], e.Output)
	case e.Action == "pass":
		s.passed++
		delete(s.output, key)
	case e.Action == "fail":
		s.failed++
		fmt.Fprint(s.out, strings.Join(s.output[key], ""))
		delete(s.output, key)
	case e.Action == "skip":
		s.skips = append(s.skips, skip{pkg: e.Package, test: e.Test, reason: reason(s.output[key])})
		delete(s.output, key)
	}
}

// reason is what a skipped test printed: its t.Skip message, without the
// framing lines of go test.
func reason(lines []string) string {
	var r []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		r = append(r, t)
	}
	return strings.Join(r, " ")
}

func (s *summary) finish() {
	fmt.Fprintf(s.out, "tests: %d passed, %d failed, %d skipped", s.passed, s.failed, len(s.skips))
	switch {
	case s.pkgsFailed == 1:
		fmt.Fprint(s.out, "; 1 package failed")
	case s.pkgsFailed > 1:
		fmt.Fprintf(s.out, "; %d packages failed", s.pkgsFailed)
	}
	fmt.Fprintln(s.out)
	if len(s.skips) > 0 {
		fmt.Fprint(s.out, "skipped:\n"+s.skipList())
	}
}

// skipList renders the skipped tests, one per line, sorted.
func (s *summary) skipList() string {
	sort.Slice(s.skips, func(i, j int) bool {
		a, b := s.skips[i], s.skips[j]
		return a.pkg < b.pkg || a.pkg == b.pkg && a.test < b.test
	})
	var b strings.Builder
	for _, sk := range s.skips {
		fmt.Fprintf(&b, "  %s %s", sk.pkg, sk.test)
		if sk.reason != "" {
			fmt.Fprintf(&b, ": %s", sk.reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}
