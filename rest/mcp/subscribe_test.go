package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
)

// TestFeedLifetime: the journal is read only while a subscription is
// open; the paths heard are the subscribed ones and what lies beneath
// them; the subscriptions a sandbox holds are bounded.
func TestFeedLifetime(t *testing.T) {
	sb, err := core.Open("t", t.TempDir(), core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	fd := &feed{srv: sdk.NewServer(&sdk.Implementation{Name: "t", Version: "1"}, nil)}
	ctx := context.Background()
	for _, uri := range []string{"file:///src", "file:///src", "file:///a%20b.txt"} {
		if err := fd.subscribe(ctx, sb, uri); err != nil {
			t.Fatal(err)
		}
	}
	if fd.stop == nil || fd.count != 3 {
		t.Fatalf("after three subscriptions: running %v, count %d", fd.stop != nil, fd.count)
	}
	for p, want := range map[string]bool{"/src": true, "/src/x/y.go": true, "/a b.txt": true, "/srcx": false, "/": false, "": false} {
		if got := fd.watched(p); got != want {
			t.Errorf("watched(%q) = %v, want %v", p, got, want)
		}
	}
	if got := strings.Join(fd.urisOf("/src/x/y.go", "/a b.txt"), " "); got != "file:///src file:///a%20b.txt" {
		t.Errorf("urisOf = %q", got)
	}
	fd.unsubscribe("file:///src")
	fd.unsubscribe("file:///nope") // never subscribed: nothing changes
	if fd.stop == nil || !fd.watched("/src") {
		t.Fatal("one of two subscriptions to /src taken back: the feed must still hear it")
	}
	fd.unsubscribe("file:///src")
	fd.unsubscribe("file:///a%20b.txt")
	if fd.stop != nil || fd.sub != nil || fd.count != 0 || fd.watched("/src") || len(fd.pathOf) != 0 {
		t.Fatalf("after the last unsubscribe: running %v, count %d, paths %v", fd.stop != nil, fd.count, fd.pathOf)
	}

	for range maxSubscriptions {
		if err := fd.subscribe(ctx, sb, "file:///f"); err != nil {
			t.Fatal(err)
		}
	}
	if err := fd.subscribe(ctx, sb, "file:///g"); err == nil || !strings.Contains(err.Error(), "subscriptions open") {
		t.Fatalf("subscription %d: %v; want a refusal", maxSubscriptions+1, err)
	}
	for range maxSubscriptions {
		fd.unsubscribe("file:///f")
	}
	if fd.stop != nil {
		t.Fatal("the feed runs with no subscription")
	}
}

// TestIsListen: a listen is told by its method, not by the word anywhere.
func TestIsListen(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`:                                     true,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen"}]`:      true,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"content":"subscriptions/listen"}}}`: false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"method":"subscriptions/listen"}}}`:  false,
		`not json subscriptions/listen`:            false,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`: false,
	} {
		if got := isListen([]byte(body)); got != want {
			t.Errorf("isListen(%s) = %v, want %v", body, got, want)
		}
	}
}
