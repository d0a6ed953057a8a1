package main

import (
	"reflect"
	"strings"
	"testing"
)

// A prove -r -v run as prove prints it: a file that passes, one with a
// failure and a TODO, one that dies after its first test, one that skips
// itself, and the Test Summary Report (with a wrapped list).
const proveOut = `/b/tests/a/00.t .. 
1..3
ok 1
ok 2
ok 3
ok
/b/tests/a/01.t .. 
1..4
ok 1
not ok 2 - tried 'create x 0644', expected 0, got ENAMETOOLONG
not ok 3 # TODO known
ok 4
Failed 1/4 subtests 
/b/tests/a/02.t .. 
1..5
ok 1
Dubious, test returned 1 (wstat 256, 0x100)
Failed 4/5 subtests 
/b/tests/a/03.t .. skipped: (no reason given)
/b/tests/a/05.t .. 
Dubious, test returned 1 (wstat 256, 0x100)
No subtests run
/b/tests/a/04.t .. 
1..30
not ok 1
Failed 30/30 subtests 

Test Summary Report
-------------------
/b/tests/a/01.t (Wstat: 0 Tests: 4 Failed: 1)
  Failed test:  2
/b/tests/a/02.t (Wstat: 256 (exited 1) Tests: 1 Failed: 0)
  Non-zero exit status: 1
  Parse errors: Bad plan.  You planned 5 tests but ran 1.
/b/tests/a/04.t (Wstat: 0 Tests: 30 Failed: 30)
  Failed tests:  1-3, 5, 7-9, 11-20, 22
                21, 23-30
  Parse errors: stray
Files=5, Tests=43,  1 wallclock secs
Result: FAIL
`

func TestParseProve(t *testing.T) {
	res, err := parseProve(strings.NewReader(proveOut), "/b/tests")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, fr := range res {
		var ns []int
		for n := range fr.failed {
			ns = append(ns, n)
		}
		got[name] = compact(ns)
	}
	want := map[string]string{
		"a/00.t": "",
		"a/01.t": "2",
		"a/02.t": "2-5",
		"a/03.t": "",     // skipped itself
		"a/05.t": "0",    // no plan: the file itself fails
		"a/04.t": "1-30", // listed by prove, or never reported
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if fr := res["a/01.t"]; fr.todo != 1 || fr.planned != 4 {
		t.Errorf("a/01.t: todo %d planned %d, want 1 and 4", fr.todo, fr.planned)
	}
	if fr := res["a/04.t"]; fr.failed[4] == "" || !strings.Contains(fr.failed[4], "never reported") {
		t.Errorf("a/04.t:4: %q, want never reported", fr.failed[4])
	}
	wantLines := []string{"a/01.t: 2", "a/02.t: 2-5"}
	fs := failures(res)
	var sub []failure
	for _, f := range fs {
		if f.file == "a/01.t" || f.file == "a/02.t" {
			sub = append(sub, f)
		}
	}
	if g := byFile(sub); !reflect.DeepEqual(g, wantLines) {
		t.Errorf("byFile: got %v, want %v", g, wantLines)
	}
}

// report fails on a test the mount fails and the root passes only; one the
// root fails too is the root's.
func TestReport(t *testing.T) {
	res := func(failed ...int) map[string]*fileResult {
		fr := newFileResult()
		fr.planned = 5
		for _, n := range failed {
			fr.failed[n] = "not ok"
		}
		return map[string]*fileResult{"a/00.t": fr}
	}
	for _, c := range []struct {
		name       string
		root, mnt  []int
		code       int
		want, hide string
	}{
		{"both pass", nil, nil, 0, "conformance: 5 passed, 0 failed, 0 skipped", "mount fails"},
		{"root's failure", []int{2}, []int{2}, 0, "conformance: 4 passed, 0 failed, 1 skipped", "mount fails"},
		{"mount's failure", []int{2}, []int{2, 4}, 1, "mount fails a/00.t: 4\n", "mount fails a/00.t: 2"},
	} {
		var b strings.Builder
		code := report(&b, "tmpfs", res(c.root...), res(c.mnt...), 0, 0, config{})
		out := b.String()
		if code != c.code || !strings.Contains(out, c.want) || strings.Contains(out, c.hide) {
			t.Errorf("%s: code %d, want %d; output:\n%s", c.name, code, c.code, out)
		}
	}
	var b strings.Builder
	if code := report(&b, "ext4", res(), nil, 0, 0, config{}); code != 1 {
		t.Errorf("no mount results: code %d, want 1", code)
	}
}
