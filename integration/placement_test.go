package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/natsout/natstest"
	"sandfs/natsout/placement"
)

// fleetToken is the daemon token the fleet's hosts share, so a request
// sent on to another host is let in there.
const fleetToken = "fleet-token-0123456789abcdef"

// startPlaced starts a host of the fleet on broker b with placement on
// (lease TTL 2 s) and its own --sandboxes DIR holding the given trees.
func startPlaced(t *testing.T, b *natstest.Broker, host string, trees map[string]map[string]string) *Daemon {
	t.Helper()
	dir := t.TempDir()
	for name, files := range trees {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, filepath.Join(dir, name), files)
	}
	return startDaemon(t, "--token", fleetToken, "--events", b.URL(), "--events-host", host,
		"--placement", "events", "--lease-ttl", "2s", "--sandboxes", dir)
}

// placedDo sends one request with the fleet's token, following no
// redirect.
func placedDo(t *testing.T, method, url, body string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+fleetToken)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Transport: plainTransport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// waitPlaced polls a request until it answers status (60 s at most).
func waitPlaced(t *testing.T, d *Daemon, method, url, body string, status int) (*http.Response, string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, got := placedDo(t, method, url, body)
		if res.StatusCode == status {
			return res, got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: %d %s after 60 s, want %d\n%s", method, url, res.StatusCode, got, status, d.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPlacementTwoHosts: two daemons on one broker, each with a directory
// "shared" in its --sandboxes DIR. One serves it, the other logs who
// holds it and sends requests there (307, the path and query kept, the
// CLI following with its token and body); a POST of a held name is 409
// naming the holder; the holder killed, the other host takes its lease
// once the TTL ran out; a lease "moving" is 503 with Retry-After; a lease
// another holding wrote stops the sandbox here; a daemon stopped releases
// its leases.
func TestPlacementTwoHosts(t *testing.T) {
	b := natstest.Start(t)
	h1 := startPlaced(t, b, "h1", map[string]map[string]string{"shared": {"a.txt": "from h1"}})
	readH1 := h1.URL + "/v1/sandboxes/shared/fs/read?path=%2Fa.txt&workingDir=%2F"
	if _, got := waitPlaced(t, h1, "GET", readH1, "", 200); got != "from h1" {
		t.Fatalf("h1 serves shared with %q", got)
	}
	if res, got := placedDo(t, "POST", h1.URL+"/v1/sandboxes", `{"name":"web"}`); res.StatusCode != 201 {
		t.Fatalf("POST web on h1: %d %s", res.StatusCode, got)
	}

	h2 := startPlaced(t, b, "h2", map[string]map[string]string{"shared": {"a.txt": "from h2"}})
	if !h2.LogHas("sandbox shared is held by host h1; not served here") || !h2.LogHas("holder_url="+h1.URL) {
		t.Fatalf("h2 does not log that h1 holds shared:\n%s", h2.Log())
	}

	// The wrong host sends the client to the right one, path and query kept.
	readH2 := h2.URL + "/v1/sandboxes/shared/fs/read?path=%2Fa.txt&workingDir=%2F"
	res, _ := waitPlaced(t, h2, "GET", readH2, "", http.StatusTemporaryRedirect)
	if loc := res.Header.Get("Location"); loc != readH1 {
		t.Fatalf("307 Location %q, want %q", loc, readH1)
	}

	// The CLI pointed at h2 follows, with its token, and with the body of
	// a PUT (a local file).
	env := []string{"SANDFS_URL=" + h2.URL, "SANDFS_TOKEN=" + fleetToken}
	if r := runSandfs(t, env, nil, "cat", "--sandbox", "shared", "/a.txt"); r.Code != 0 || r.Stdout != "from h1" {
		t.Fatalf("cat through h2: %s", r)
	}
	local := filepath.Join(t.TempDir(), "b.txt")
	if err := os.WriteFile(local, []byte("written through h2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runSandfs(t, env, nil, "put", "--sandbox", "shared", local, "/b.txt"); r.Code != 0 {
		t.Fatalf("put through h2: %s", r)
	}
	if _, got := placedDo(t, "GET", h1.URL+"/v1/sandboxes/shared/fs/read?path=/b.txt", ""); got != "written through h2" {
		t.Fatalf("h1's shared/b.txt: %q", got)
	}

	// A name another host holds cannot be made here.
	if res, got := placedDo(t, "POST", h2.URL+"/v1/sandboxes", `{"name":"web"}`); res.StatusCode != 409 || !strings.Contains(got, "h1") {
		t.Fatalf("POST web on h2: %d %s, want 409 naming h1", res.StatusCode, got)
	}

	// The holder dies: once its leases expire, h2 takes "web" up.
	h1.Signal(t, syscall.SIGKILL)
	if _, exited := h1.Wait(30 * time.Second); !exited {
		t.Fatal("h1 did not die")
	}
	waitPlaced(t, h2, "POST", h2.URL+"/v1/sandboxes", `{"name":"web"}`, 201)
	if !h2.LogHas("serving sandbox web of --sandboxes") {
		t.Fatalf("h2 does not serve web:\n%s", h2.Log())
	}

	// A sandbox moving between hosts: 503, Retry-After, the named shape.
	js := b.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, placement.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(placement.Record{Name: "away", Host: "h3", URL: "http://127.0.0.1:9", State: placement.Moving, To: "h2"})
	if _, err := kv.Put(ctx, placement.KeyOf("away"), rec); err != nil {
		t.Fatal(err)
	}
	res, got := waitPlaced(t, h2, "GET", h2.URL+"/v1/sandboxes/away/fs/stat?path=/", "", http.StatusServiceUnavailable)
	var e struct{ Error, Code string }
	if res.Header.Get("Retry-After") == "" || json.Unmarshal([]byte(got), &e) != nil || e.Code != "EAGAIN" || !strings.Contains(e.Error, "moving") {
		t.Fatalf("moving: Retry-After %q, %s", res.Header.Get("Retry-After"), got)
	}

	// Another holding writes a lease h2 holds: h2 stops serving it and
	// sends its requests to the new holder.
	if res, got := placedDo(t, "POST", h2.URL+"/v1/sandboxes", `{"name":"taken"}`); res.StatusCode != 201 {
		t.Fatalf("POST taken on h2: %d %s", res.StatusCode, got)
	}
	rec, _ = json.Marshal(placement.Record{Name: "taken", Host: "h3", URL: "http://127.0.0.1:9", State: placement.Serving, Lease: "h3's"})
	if _, err := kv.Put(ctx, placement.KeyOf("taken"), rec); err != nil {
		t.Fatal(err)
	}
	if !h2.LogHas(`msg="placement: another host took the lease; the sandbox is no longer served here" sandbox=taken holder=h3`) {
		t.Fatalf("h2 does not log the lease taken:\n%s", h2.Log())
	}
	res, _ = waitPlaced(t, h2, "GET", h2.URL+"/v1/sandboxes/taken/fs/stat?path=/", "", http.StatusTemporaryRedirect)
	if loc := res.Header.Get("Location"); loc != "http://127.0.0.1:9/v1/sandboxes/taken/fs/stat?path=/" {
		t.Fatalf("307 Location %q", loc)
	}

	// A daemon stopped gives its leases back.
	h2.Stop(t)
	for _, name := range []string{"web", "shared"} {
		if _, err := kv.Get(ctx, placement.KeyOf(name)); !errors.Is(err, jetstream.ErrKeyDeleted) && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("lease of %s after h2 stopped: %v, want none", name, err)
		}
	}
}

// TestPlacementBrokerAway: with the broker gone, a host keeps serving its
// sandbox until the lease would expire, then stops and says so; with the
// broker back, it serves it again.
func TestPlacementBrokerAway(t *testing.T) {
	b := natstest.Start(t)
	h1 := startPlaced(t, b, "h1", map[string]map[string]string{"shared": {"a.txt": "from h1"}})
	read := h1.URL + "/v1/sandboxes/shared/fs/read?path=/a.txt"
	waitPlaced(t, h1, "GET", read, "", 200)
	b.Stop()
	if !h1.LogHas("placement: renewing the lease failed; the sandbox stays served until the lease would expire") {
		t.Fatalf("no failed renewal logged:\n%s", h1.Log())
	}
	if !h1.LogHas("placement: the lease was not renewed in time") {
		t.Fatalf("the lease was not given up:\n%s", h1.Log())
	}
	waitPlaced(t, h1, "GET", read, "", 404)
	b.Restart()
	if _, got := waitPlaced(t, h1, "GET", read, "", 200); got != "from h1" {
		t.Fatalf("served again with %q", got)
	}
}
