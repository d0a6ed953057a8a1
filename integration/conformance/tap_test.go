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
