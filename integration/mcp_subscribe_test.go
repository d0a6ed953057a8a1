package integration

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPSubscribeMirror: a client subscribed to a file over MCP hears
// the changes the mount and outside processes make to it, each with its
// origin, as it hears the API's.
func TestMCPSubscribeMirror(t *testing.T) {
	d, mnt := startMirror(t)
	waitWatchReady(t, d)
	type heard struct{ uri, origin, path string }
	notices, acks := make(chan heard, 64), make(chan struct{}, 8)
	c := sdk.NewClient(&sdk.Implementation{Name: "subscriber", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			ev, _ := r.Params.Meta["event"].(map[string]any)
			origin, _ := ev["origin"].(string)
			p, _ := ev["path"].(string)
			notices <- heard{r.Params.URI, origin, p}
		},
	})
	c.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acks <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: d.BaseURL() + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerRT(d.Token)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	for _, c := range []struct {
		name, file, origin string
		write              func(p string) error
	}{
		{"mount", "m.txt", "fuse", func(p string) error { return os.WriteFile(filepath.Join(mnt, p), []byte("by the mount"), 0o644) }},
		{"outside", "o.txt", "external", func(p string) error { return os.WriteFile(filepath.Join(d.Root, p), []byte("outside"), 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			uri := "file:///" + c.file
			if err := cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-acks:
			case <-time.After(60 * time.Second):
				t.Fatal("no acknowledgement")
			}
			if err := c.write(c.file); err != nil {
				t.Fatal(err)
			}
			for {
				select {
				case n := <-notices:
					if n.uri != uri { // the earlier case's later events (a write after the create)
						continue
					}
					if n.path != "/"+c.file || n.origin != c.origin {
						t.Fatalf("heard %+v; want %s of /%s", n, c.origin, c.file)
					}
					return
				case <-time.After(60 * time.Second):
					t.Fatalf("nothing heard of %s", c.file)
				}
			}
		})
	}
}
