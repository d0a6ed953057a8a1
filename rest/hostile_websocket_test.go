package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"sandfs/rest/named"
)

// TestHostileWebsocket: the named watch socket answers every hostile
// message with {"type":"error"} and lives on; a message over its limit
// closes that socket (1009) and nothing else.
func TestHostileWebsocket(t *testing.T) {
	h := newNamedHarness(t)
	h.mkdir(t, "/w")
	before := h.tree(t)
	c := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	send := func(raw string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
			t.Fatalf("write %q: %v", raw, err)
		}
	}
	many := make([]string, named.MaxSocketPaths+1)
	for i := range many {
		many[i] = fmt.Sprintf("/w/p%d", i)
	}
	manyJSON, _ := json.Marshal(map[string]any{"type": "subscribe", "paths": many})
	for name, raw := range map[string]string{
		"not json":         "{",
		"array":            "[]",
		"type as number":   `{"type":1,"paths":["/w"]}`,
		"paths as string":  `{"type":"subscribe","paths":"/w"}`,
		"recursive string": `{"type":"subscribe","paths":["/w"],"recursive":"yes"}`,
		"unknown type":     `{"type":"unsubscribe","paths":["/w"]}`,
		"no paths":         `{"type":"subscribe","paths":[]}`,
		"NUL path":         `{"type":"subscribe","paths":["/w\u0000x"]}`,
		"overlong name":    `{"type":"subscribe","paths":["/` + longName + `"]}`,
		"overlong path":    `{"type":"subscribe","paths":["` + longPath + `"]}`,
		"relative wd":      `{"type":"subscribe","paths":["x"],"workingDir":"rel"}`,
		"too many paths":   string(manyJSON),
	} {
		send(raw)
		if m := wsRecv(t, c, 5*time.Second); m.Type != "error" || m.Message == "" {
			t.Errorf("%s: got %+v, want an error message", name, m)
		}
	}
	// The socket still works.
	send(`{"type":"subscribe","paths":["/w"]}`)
	if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" {
		t.Fatalf("after the hostile messages: got %+v, want subscribed", m)
	}
	// Over the message limit: this socket is closed as too big.
	send(`{"type":"subscribe","paths":["` + strings.Repeat("a", named.MaxSocketMessage) + `"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
				t.Errorf("closed with %v (%v), want 1009 message too big", got, err)
			}
			break
		}
	}
	// Another socket is served.
	c2 := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	c2.Write(ctx2, websocket.MessageText, []byte(`{"type":"subscribe","paths":["/w"]}`))
	if m := wsRecv(t, c2, 5*time.Second); m.Type != "subscribed" {
		t.Errorf("a new socket: got %+v, want subscribed", m)
	}
	h.wantTree(t, before)
}
