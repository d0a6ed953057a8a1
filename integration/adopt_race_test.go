package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandfs/natsout/natstest"
)

// TestAdoptRace: the host of s1 is killed; once its lease expired, two
// hosts take s1 up from the fleet at once: exactly one serves it, the
// other is refused naming the winner, keeps no trace of s1, and sends its
// requests for s1 to the winner.
func TestAdoptRace(t *testing.T) {
	b := natstest.Start(t)
	host := func(name string) (*Daemon, string) {
		dir := filepath.Join(t.TempDir(), "sandboxes")
		must(t, os.Mkdir(dir, 0o755))
		return startDaemon(t, "--token", fleetToken, "--events", b.URL(), "--events-host", name, "--replicate", "events",
			"--placement", "events", "--lease-ttl", "2s", "--sandboxes", dir), dir
	}
	a, dirA := host("ha")
	must(t, os.Mkdir(filepath.Join(dirA, "s1"), 0o755))
	waitPlaced(t, a, "GET", a.URL+"/v1/sandboxes/s1/fs/list?path=/", "", http.StatusOK)
	writeFiles(t, filepath.Join(dirA, "s1"), map[string]string{"a.txt": "alpha"})
	if res, body := placedDo(t, "POST", a.URL+"/v1/sandboxes/s1/checkpoints", "{}"); res.StatusCode != http.StatusCreated {
		t.Fatalf("checkpoint: %d %s", res.StatusCode, body)
	}
	waitReplicated(t, a, "s1")
	a.Signal(t, syscall.SIGKILL)
	a.Wait(30 * time.Second)

	hosts := map[string]*Daemon{}
	dirs := map[string]string{}
	hosts["hb"], dirs["hb"] = host("hb")
	hosts["hc"], dirs["hc"] = host("hc")
	// Refused while ha's lease lives, then free once it expired.
	waitPlaced(t, hosts["hb"], "POST", hosts["hb"].URL+"/v1/sandboxes", `{"name":"s1","adopt":true,"checkpoint":"cp_000000000000"}`, http.StatusNotFound)

	var wg sync.WaitGroup
	status := map[string]int{}
	var mu sync.Mutex
	for name, d := range hosts {
		wg.Go(func() {
			res, body := placedDo(t, "POST", d.URL+"/v1/sandboxes", `{"name":"s1","adopt":true}`)
			mu.Lock()
			defer mu.Unlock()
			status[name] = res.StatusCode
			t.Logf("%s: %d %s", name, res.StatusCode, body)
		})
	}
	wg.Wait()
	var winner, loser string
	for name, st := range status {
		switch st {
		case http.StatusCreated:
			winner = name
		case http.StatusConflict:
			loser = name
		}
	}
	if winner == "" || loser == "" {
		t.Fatalf("adoptions answered %v; want one 201 and one 409", status)
	}
	wantFile(t, filepath.Join(dirs[winner], "s1", "a.txt"), "alpha")
	if names, _ := os.ReadDir(dirs[loser]); len(names) != 0 {
		t.Errorf("the loser's --sandboxes holds %v; want nothing", names)
	}
	res, _ := waitPlaced(t, hosts[loser], "GET", hosts[loser].URL+"/v1/sandboxes/s1/fs/read?path=/a.txt", "", http.StatusTemporaryRedirect)
	if loc := res.Header.Get("Location"); loc != hosts[winner].URL+"/v1/sandboxes/s1/fs/read?path=/a.txt" {
		t.Errorf("the loser redirects to %q; want the winner %s", loc, hosts[winner].URL)
	}
}
