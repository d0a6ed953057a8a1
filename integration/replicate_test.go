package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sandfs/natsout/natstest"
	"sandfs/natsout/replicate"
)

// TestReplicateCheckpoints: a daemon with --replicate events sends a
// checkpoint made through the CLI to the broker (its objects and its
// manifest), and /metrics says so.
func TestReplicateCheckpoints(t *testing.T) {
	b := natstest.Start(t)
	d := startDaemon(t, "--events", b.URL(), "--events-host", "h1", "--replicate", "events")
	d.WaitReady(t)
	writeFiles(t, d.Root, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "c.txt": "alpha"})
	r := d.CLI(t, nil, "checkpoint", "--json")
	if r.Code != 0 {
		t.Fatalf("checkpoint: %s", r)
	}
	var cp struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &cp); err != nil || cp.ID == "" {
		t.Fatalf("checkpoint --json: %v\n%s", err, r)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := metricsText(t, d)
		if strings.Contains(m, `sandfs_replication_manifests_sent_total{sandbox="default"} 1`+"\n") &&
			strings.Contains(m, `sandfs_replication_checkpoints_behind{sandbox="default"} 0`+"\n") {
			if !strings.Contains(m, `sandfs_replication_objects_sent_total{sandbox="default"} 2`+"\n") {
				t.Fatalf("want 2 objects sent (alpha once, beta):\n%s", grepLines(m, "sandfs_replication"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checkpoint was not replicated in 60 s:\n%s\n%s", grepLines(m, "sandfs_replication"), d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}

	js := b.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, replicate.BucketOf("default"))
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, replicate.ObjectsBucket)
	if err != nil {
		t.Fatal(err)
	}
	m, err := replicate.ReadManifest(ctx, kv, obs, cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range m.Entries {
		if e.Type == "file" {
			body, err := replicate.NewFleet(js).ObjectBytes(ctx, e.Hash, e.Size)
			if err != nil {
				t.Fatalf("object of %s: %v", e.Path, err)
			}
			got[e.Path] = string(body)
		}
	}
	want := map[string]string{"/a.txt": "alpha", "/d/b.txt": "beta", "/c.txt": "alpha"}
	if len(got) != len(want) || m.Host != "h1" {
		t.Fatalf("manifest: files %v host %q, want %v from h1", got, m.Host, want)
	}
	for p, c := range want {
		if got[p] != c {
			t.Fatalf("%s: %q in the fleet, want %q", p, got[p], c)
		}
	}
}
