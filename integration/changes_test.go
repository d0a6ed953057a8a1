package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// changesAnswer is the part of GET /v1/sandboxes/NAME/changes read here.
type changesAnswer struct {
	Since struct {
		Seq uint64 `json:"seq"`
	} `json:"since"`
	UntilSeq uint64 `json:"untilSeq"`
	Lost     bool   `json:"lost"`
	Changes  []struct {
		Path        string   `json:"path"`
		Change      string   `json:"change"`
		RenamedFrom string   `json:"renamedFrom"`
		Size        int64    `json:"size"`
		Actors      []string `json:"actors"`
		Diff        string   `json:"diff"`
		Last        struct {
			Origin string `json:"origin"`
			Actor  string `json:"actor"`
			Pid    uint32 `json:"pid"`
			Comm   string `json:"comm"`
		} `json:"last"`
	} `json:"changes"`
}

func getChanges(t *testing.T, d *Daemon, query string) changesAnswer {
	t.Helper()
	resp, err := http.Get(d.URL + "/v1/sandboxes/default/changes?" + query)
	must(t, err)
	defer resp.Body.Close()
	var a changesAnswer
	if resp.StatusCode != 200 {
		t.Fatalf("GET changes?%s: %s", query, resp.Status)
	}
	must(t, json.NewDecoder(resp.Body).Decode(&a))
	return a
}

// TestChangesThreeActors: a real daemon with a real mount; an agent writes
// through REST (X-Sandfs-Actor: agent-1), a process on the mount writes a
// file and renames another, a process outside writes the root. Changes
// since the point before names each row's actor, the added files' diffs
// are exact, and sandfs changes prints the same.
func TestChangesThreeActors(t *testing.T) {
	d, mnt := startMirror(t)
	must(t, os.WriteFile(filepath.Join(d.Root, "shared.md"), []byte("kept\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(d.Root, "notes.md"), []byte("one\n"), 0o644))
	// The outside creates are told before the start point.
	deadline := time.Now().Add(10 * time.Second)
	for len(getChanges(t, d, "").Changes) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	start := getChanges(t, d, "").UntilSeq

	req, _ := http.NewRequest("PUT", d.URL+"/v1/sandboxes/default/fs/write?path=/agent.txt", strings.NewReader("from the agent\n"))
	req.Header.Set("X-Sandfs-Actor", "agent-1")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT: %s", resp.Status)
	}
	cmd := exec.Command("sh", "-c", "echo typed by a person > person.txt && mv shared.md renamed.md")
	cmd.Dir = mnt
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh on the mount: %v %s", err, out)
	}
	want := "added /agent.txt by agent-1\n"
	if _, err := exec.LookPath("vim"); err == nil {
		// A person's editor on a file that was there: vim writes it in place.
		cmd := exec.Command("vim", "-u", "NONE", "-N", "-es", "-c", "normal Gotwo", "-c", "wq", "notes.md")
		cmd.Dir = mnt
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("vim on the mount: %v %s", err, out)
		}
		want += "modified /notes.md by fuse:vim\n"
	} else {
		t.Log("vim is not installed: the person's edit with it is not tried")
	}
	must(t, os.WriteFile(filepath.Join(d.Root, "outside.txt"), []byte("from outside\n"), 0o644))
	want += "added /outside.txt by external\nadded /person.txt by fuse:sh\nrenamed /renamed.md <- /shared.md by fuse:mv"
	var a changesAnswer
	var got string
	for deadline := time.Now().Add(10 * time.Second); ; {
		a = getChanges(t, d, fmt.Sprintf("since=%d&diff=true", start))
		var rows []string
		kept := a.Changes[:0]
		for _, c := range a.Changes {
			if strings.HasPrefix(c.Path, "/.go-fuse.") {
				// go-fuse's placeholder name for a node unlinked while open
				// (vim's swap file): the mirror must never tell a change there.
				t.Errorf("a change of %s (by %v): the release of an unlinked file was told", c.Path, c.Actors)
				continue
			}
			kept = append(kept, c)
			s := c.Change + " " + c.Path
			if c.RenamedFrom != "" {
				s += " <- " + c.RenamedFrom
			}
			rows = append(rows, s+" by "+strings.Join(c.Actors, ","))
		}
		a.Changes = kept
		if got = strings.Join(rows, "\n"); got == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the kernel watch tells the outside write
	}
	if got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s\n%s", got, want, d.Log())
	}
	if a.Since.Seq != start || a.Lost {
		t.Errorf("since %d lost %v, want %d false", a.Since.Seq, a.Lost, start)
	}
	content := map[string]string{"/agent.txt": "from the agent\n", "/outside.txt": "from outside\n", "/person.txt": "typed by a person\n"}
	origin := map[string]string{"/agent.txt": "api", "/notes.md": "fuse", "/outside.txt": "external", "/person.txt": "fuse", "/renamed.md": "fuse"}
	for _, c := range a.Changes {
		if c.Last.Origin != origin[c.Path] {
			t.Errorf("%s: last origin %s, want %s", c.Path, c.Last.Origin, origin[c.Path])
		}
		if c.Last.Origin == "fuse" && (c.Last.Pid == 0 || c.Last.Comm == "") {
			t.Errorf("%s: pid %d comm %q", c.Path, c.Last.Pid, c.Last.Comm)
		}
		if body, ok := content[c.Path]; ok {
			p := strings.TrimPrefix(c.Path, "/")
			if wantDiff := "--- a/" + p + "\n+++ b/" + p + "\n@@ -0,0 +1 @@\n+" + body; c.Diff != wantDiff || c.Size != int64(len(body)) {
				t.Errorf("%s: size %d diff %q, want %q", c.Path, c.Size, c.Diff, wantDiff)
			}
		}
	}

	for actor, want := range map[string]string{"agent-1": "/agent.txt", "fuse:sh": "/person.txt", "external": "/outside.txt"} {
		a := getChanges(t, d, fmt.Sprintf("since=%d&actor=%s&path=%s", start, url.QueryEscape(actor), want))
		if len(a.Changes) != 1 || a.Changes[0].Path != want {
			t.Errorf("actor %s, path %s: %+v", actor, want, a.Changes)
		}
		other := getChanges(t, d, fmt.Sprintf("since=%d&actor=%s&path=/renamed.md", start, url.QueryEscape(actor)))
		if len(other.Changes) != 0 {
			t.Errorf("actor %s picks another's row: %+v", actor, other.Changes)
		}
	}

	r := d.CLI(t, nil, "changes", "--since", fmt.Sprint(start))
	for _, line := range []string{"A /agent.txt  by agent-1 (api), ", "A /outside.txt  by external, ", "A /person.txt  by sh (fuse), ",
		"R /renamed.md <- /shared.md  by mv (fuse), "} {
		if r.Code != 0 || !strings.Contains(r.Stdout, "\n"+line) && !strings.HasPrefix(r.Stdout, line) {
			t.Errorf("sandfs changes: no line %q\n%s", line, r)
		}
	}
	if r := d.CLI(t, nil, "changes", "--since", "cp_nope"); r.Code != 2 || !strings.Contains(r.Stderr, "unknown checkpoint") {
		t.Errorf("unknown checkpoint: %s", r)
	}
}
