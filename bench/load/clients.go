package load

// The clients: what they share, one request with its accounting, and each
// client's loop of writes, read-backs and deletes.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// gen is the state the clients share.
type gen struct {
	cfg       Config
	rep       *Report
	hc        *http.Client
	requests  atomic.Int64
	status5xx atomic.Int64
	verified  atomic.Int64
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// do sends one request and returns the body of a 2xx answer (an AIO
// envelope with success:false is an error too). A 5xx is counted and failed.
func (g *gen) do(ctx context.Context, family, method, route string, body io.Reader, ctype string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, g.cfg.URL+route, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	g.requests.Add(1)
	v, _ := g.rep.familyCounts.LoadOrStore(family, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	resp, err := g.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			g.rep.fail("%s %s: %v", method, route, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		g.status5xx.Add(1)
		g.rep.fail("%s %s: %s: %.200s", method, route, resp.Status, b)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %.200s", method, route, resp.Status, b)
	}
	if strings.HasPrefix(family, "aio") && bytes.HasPrefix(b, []byte(`{"success":false`)) {
		return nil, fmt.Errorf("%s %s: %.200s", method, route, b)
	}
	return b, nil
}

// client runs one client until stop ends and returns its acknowledged files
// and its acknowledged deletes. Its requests run under ctx, so the one in
// flight when stop ends completes and is acknowledged or refused.
func (g *gen) client(stop, ctx context.Context, id int) (acks []ack, deleted []string) {
	dir := fmt.Sprintf("/load/c%02d", id)
	if _, err := g.do(ctx, "agent", "POST", "/v1/fs/mkdir?path="+dir, nil, ""); err != nil {
		g.rep.fail("mkdir %s: %v", dir, err)
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	var live []ack
	for n := 0; stop.Err() == nil; n++ {
		switch op := rng.IntN(10); {
		case op < 5: // a new file through one of six writers
			content := make([]byte, rng.IntN(g.cfg.MaxBody+1))
			for i := range content {
				content[i] = 'a' + byte(rng.IntN(26)) // text: the AIO JSON writes take UTF-8
			}
			p := fmt.Sprintf("%s/w%06d", dir, n)
			a, err := g.write(ctx, rng.IntN(6), p, content)
			if err != nil {
				if ctx.Err() == nil {
					g.rep.fail("write %s: %v", p, err)
				}
				continue
			}
			acks = append(acks, a)
			live = append(live, a)
		case op < 8 && len(live) > 0: // read back a live file through another family
			a := live[rng.IntN(len(live))]
			b, err := g.read(ctx, rng.IntN(4), a.path)
			if err != nil {
				if ctx.Err() == nil {
					g.rep.fail("read %s: %v", a.path, err)
				}
				continue
			}
			if sum(b) != a.sum {
				g.rep.fail("read %s: hash %s, acknowledged %s", a.path, sum(b)[:12], a.sum[:12])
			} else {
				g.verified.Add(1)
			}
		default: // list or stat
			switch rng.IntN(4) {
			case 0:
				g.do(ctx, "agent", "GET", "/v1/fs/entries?path="+dir, nil, "")
			case 1:
				g.do(ctx, "aio-v2", "GET", "/v2/fs/list?path="+dir, nil, "")
			case 2:
				g.do(ctx, "aio-v1", "POST", "/v1/file/list", strings.NewReader(`{"path":"`+dir+`"}`), "application/json")
			case 3:
				g.do(ctx, "named", "GET", "/v1/sandboxes/default/fs/list?path="+dir, nil, "")
			}
		}
		for len(live) > g.cfg.Window { // bounded disk: drop the oldest
			a := live[0]
			if err := g.remove(ctx, rng.IntN(4), a.path); err != nil {
				if ctx.Err() == nil {
					g.rep.fail("delete %s: %v", a.path, err)
				}
				break
			}
			deleted = append(deleted, a.path)
			live = live[1:]
		}
	}
	return acks, deleted
}

// write makes the new file p through writer w (0-5) and returns its ack.
func (g *gen) write(ctx context.Context, w int, p string, content []byte) (ack, error) {
	a := ack{path: p, sum: sum(content)}
	q := url.QueryEscape(p)
	var err error
	switch w {
	case 0:
		_, err = g.do(ctx, "agent", "PUT", "/v1/fs/file?path="+q, bytes.NewReader(content), "")
	case 1:
		b, _ := json.Marshal(map[string]string{"path": p, "content": string(content)})
		_, err = g.do(ctx, "aio-v2", "POST", "/v2/fs/write", bytes.NewReader(b), "application/json")
	case 2:
		b, _ := json.Marshal(map[string]string{"file": p, "content": string(content)})
		_, err = g.do(ctx, "aio-v1", "POST", "/v1/file/write", bytes.NewReader(b), "application/json")
	case 3, 4:
		route, fam := "/v2/fs/upload", "aio-v2"
		if w == 4 {
			route, fam = "/v1/file/upload", "aio-v1"
		}
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("path", p)
		fw, _ := mw.CreateFormFile("file", "x")
		fw.Write(content)
		mw.Close()
		_, err = g.do(ctx, fam, "POST", route, &body, mw.FormDataContentType())
		a.upload = true
	case 5:
		_, err = g.do(ctx, "named", "PUT", "/v1/sandboxes/default/fs/write?path="+q, bytes.NewReader(content), "")
	}
	return a, err
}

// read returns the bytes of p through reader r (0-3).
func (g *gen) read(ctx context.Context, r int, p string) ([]byte, error) {
	q := url.QueryEscape(p)
	switch r {
	case 0:
		return g.do(ctx, "agent", "GET", "/v1/fs/file?path="+q, nil, "")
	case 1:
		return g.do(ctx, "aio-v2", "GET", "/v2/fs/download?path="+q, nil, "")
	case 2:
		b, err := g.do(ctx, "aio-v2", "GET", "/v2/fs/read?path="+q, nil, "")
		if err != nil {
			return nil, err
		}
		var out struct {
			Data struct {
				Content string `json:"content"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
		return []byte(out.Data.Content), nil
	default:
		return g.do(ctx, "named", "GET", "/v1/sandboxes/default/fs/read?path="+q, nil, "")
	}
}

// remove deletes p through family f (0-3).
func (g *gen) remove(ctx context.Context, f int, p string) error {
	var err error
	switch f {
	case 0:
		_, err = g.do(ctx, "agent", "DELETE", "/v1/fs/entry?path="+url.QueryEscape(p), nil, "")
	case 1:
		_, err = g.do(ctx, "aio-v2", "POST", "/v2/fs/delete", strings.NewReader(`{"path":"`+p+`"}`), "application/json")
	case 2:
		_, err = g.do(ctx, "aio-v1", "POST", "/v1/file/delete", strings.NewReader(`{"path":"`+p+`"}`), "application/json")
	default:
		_, err = g.do(ctx, "named", "DELETE", "/v1/sandboxes/default/fs/delete?path="+url.QueryEscape(p), nil, "")
	}
	return err
}
