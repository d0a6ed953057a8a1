package rest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"sandfs/rest/named"
)

// fakePlacement is the fleet's placement as a map.
type fakePlacement map[string]Placed

func (f fakePlacement) Placed(name string) (Placed, bool) { p, ok := f[name]; return p, ok }

// rawDo sends a request and follows no redirect.
func rawDo(t *testing.T, rh *regHarness, method, target, token string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, rh.ts.URL+target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestPlacementRedirects(t *testing.T) {
	const tok = "daemon-token"
	rh := newRegHarness(t, regOpts{Token: tok, Manager: newFakeManager(t), Placement: fakePlacement{
		"far":    {Host: "beta", URL: "http://beta.example:7420/"},
		"moving": {Host: "beta", URL: "http://beta.example:7420", Moving: true},
		"a":      {Host: "gamma", URL: "http://gamma.example:7420"}, // served here: this daemon's wins
		"mine":   {Host: "alpha", URL: "http://alpha.example:7420", Here: true},
	}})
	for _, c := range []struct {
		name, method, target string
		hdr                  map[string]string
		status               int
		location             string
	}{
		{"named route", "GET", "/v1/sandboxes/far/fs/read?path=%2Fa+b&x=1", nil, 307, "http://beta.example:7420/v1/sandboxes/far/fs/read?path=%2Fa+b&x=1"},
		{"sprites alias", "GET", "/v1/sprites/far/fs/stat?path=/", nil, 307, "http://beta.example:7420/v1/sprites/far/fs/stat?path=/"},
		{"selector header", "GET", "/v1/fs/stat?path=/", map[string]string{"X-Sandfs-Sandbox": "far"}, 307, "http://beta.example:7420/v1/fs/stat?path=/"},
		{"selector query", "GET", "/v2/fs/list?path=/&sandbox=far", nil, 307, "http://beta.example:7420/v2/fs/list?path=/&sandbox=far"},
		{"put", "PUT", "/v1/sandboxes/far/fs/write?path=/x", nil, 307, "http://beta.example:7420/v1/sandboxes/far/fs/write?path=/x"},
		{"delete", "DELETE", "/v1/sandboxes/far", nil, 307, "http://beta.example:7420/v1/sandboxes/far"},
		{"served here", "GET", "/v1/sandboxes/a/fs/stat?path=/who", nil, 200, ""},
		{"held here, not served", "GET", "/v1/sandboxes/mine/fs/stat?path=/", nil, 404, ""},
		{"unknown everywhere", "GET", "/v1/sandboxes/nowhere/fs/stat?path=/", nil, 404, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := rawDo(t, rh, c.method, c.target, tok, c.hdr, "")
			if res.StatusCode != c.status {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("status %d, want %d: %s", res.StatusCode, c.status, b)
			}
			if got := res.Header.Get("Location"); got != c.location {
				t.Fatalf("Location %q, want %q", got, c.location)
			}
			if c.status == 307 && res.Header.Get(HolderHeader) != "beta" {
				t.Fatalf("%s: %q, want beta", HolderHeader, res.Header.Get(HolderHeader))
			}
		})
	}

	// Nothing is told to a request this daemon would refuse.
	if res := rawDo(t, rh, "GET", "/v1/sandboxes/far/fs/stat?path=/", "", nil, ""); res.StatusCode != 401 || res.Header.Get("Location") != "" {
		t.Fatalf("no token: %d %q, want 401 and no Location", res.StatusCode, res.Header.Get("Location"))
	}

	// Moving: 503 with Retry-After, in the family's shape.
	res := rawDo(t, rh, "GET", "/v1/sandboxes/moving/fs/stat?path=/", tok, nil, "")
	var body named.ErrorBody
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 503 || res.Header.Get("Retry-After") == "" ||
		body.Code != "EAGAIN" || !strings.Contains(body.Error, "moving") {
		t.Fatalf("moving: %d Retry-After %q %+v %v", res.StatusCode, res.Header.Get("Retry-After"), body, err)
	}
	res = rawDo(t, rh, "GET", "/v2/fs/list?path=/", tok, map[string]string{"X-Sandfs-Sandbox": "moving"}, "")
	var env struct {
		Success bool
		Data    struct {
			ErrorType string `json:"error_type"`
			Retryable bool
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&env); err != nil || res.StatusCode != 503 || env.Success ||
		env.Data.ErrorType != "sandbox_moving" || !env.Data.Retryable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("moving, AIO: %d %+v %v", res.StatusCode, env, err)
	}

	// POST of a name another host holds: 409 naming it.
	res = rawDo(t, rh, "POST", "/v1/sandboxes", tok, nil, `{"name":"far"}`)
	body = named.ErrorBody{}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 409 ||
		!strings.Contains(body.Error, "beta") || !strings.Contains(body.Error, "http://beta.example:7420") {
		t.Fatalf("create of a name held elsewhere: %d %+v %v", res.StatusCode, body, err)
	}
}
