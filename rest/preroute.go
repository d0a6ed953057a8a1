package rest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"sandfs/rest/httpkit"
)

// Pre-routing errors (api.md §1). net/http refuses some requests
// before any handler runs, writing a plain-text answer straight to the
// connection: 431 for a request line and headers over MaxHeaderBytes, 400
// for a missing or malformed Host or a bad header, 501 for an unknown
// transfer coding, 505 for an unknown protocol version. Nothing in
// http.Server turns these off or lets a handler see them, so the daemon's
// listener wraps each connection (WrapListener): the connection recognises
// net/http's own error write, which is one Write of exactly
//
//	HTTP/1.1 <code> <text>\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n<message>
//
// with no Date header (every answer a handler gives has one), and sends in
// its place the same status in the family shape of the request's route, or
// a problem+json where no route is known. The route comes from the first
// bytes the client sent after the previous answer: the request line of the
// refused request, on a connection whose client waits for each answer
// before sending the next request (every browser and common client; a
// pipelining client may see a neighbour's family). The connection closes
// after it, as net/http closes it.
//
// The wrapper keeps net/http's fast paths: ReadFrom reaches the TCP
// connection's sendfile and splice, and CloseWrite its half-close.

// WrapListener wraps l so that the answers net/http gives before routing
// come in the route family's shape. cmd/sandfs serves through it.
func (s *Server) WrapListener(l net.Listener) net.Listener { return &prerouteListener{l, s} }

type prerouteListener struct {
	net.Listener
	s *Server
}

func (l *prerouteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &prerouteConn{Conn: c, s: l.s, fresh: true}, nil
}

// headCap is how much of a request's start is kept: a request line's
// method and path, enough to pick the family of any route.
const headCap = 256

type prerouteConn struct {
	net.Conn
	s *Server

	mu    sync.Mutex // Read (net/http's background read) and Write may run at once
	fresh bool       // an answer was written since the last read: the next bytes start a request
	head  []byte     // the first bytes of the latest request, up to headCap
}

func (c *prerouteConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if c.fresh {
			c.head, c.fresh = c.head[:0], false
		}
		if room := headCap - len(c.head); room > 0 {
			c.head = append(c.head, p[:min(n, room)]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *prerouteConn) wrote() {
	c.mu.Lock()
	c.fresh = true
	c.mu.Unlock()
}

// plainErrorHeaders follows the status line of every error net/http writes
// itself (server.go, conn.serve).
const plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *prerouteConn) Write(p []byte) (int, error) {
	if status, msg, ok := plainError(p); ok {
		c.mu.Lock()
		head := string(c.head)
		c.mu.Unlock()
		if _, err := c.Conn.Write(c.s.prerouteAnswer(head, status, msg)); err != nil {
			return 0, err
		}
		c.wrote()
		return len(p), nil
	}
	n, err := c.Conn.Write(p)
	c.wrote()
	return n, err
}

// ReadFrom hands a body to the TCP connection's ReadFrom (sendfile,
// splice), as net/http does when the connection is a *net.TCPConn.
func (c *prerouteConn) ReadFrom(r io.Reader) (int64, error) {
	defer c.wrote()
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite half-closes a TCP connection, which net/http does before it
// lingers on a refused request.
func (c *prerouteConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// plainError recognises one of net/http's own error writes: its status and
// its message ("malformed Host header" of "400 Bad Request: malformed Host
// header").
func plainError(p []byte) (status int, msg string, ok bool) {
	if len(p) < 13 || p[0] != 'H' || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return 0, "", false
	}
	eol := bytes.IndexByte(p, '\r')
	if eol < 0 || !bytes.HasPrefix(p[eol:], []byte(plainErrorHeaders)) {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(p[9:12]))
	if err != nil || status < 400 {
		return 0, "", false
	}
	body := string(p[eol+len(plainErrorHeaders):])
	text := strconv.Itoa(status) + " " + http.StatusText(status)
	msg = strings.TrimPrefix(strings.TrimPrefix(body, text), ": ")
	if msg == "" || msg == body {
		msg = strings.ToLower(http.StatusText(status))
	}
	return status, msg, true
}

// prerouteAnswer renders a pre-routing refusal in the family of the route
// the request line head names, as a complete HTTP/1.1 answer that closes
// the connection.
func (s *Server) prerouteAnswer(head string, status int, msg string) []byte {
	fam := s.shapeOf(FamilyService)
	method, rest, ok := strings.Cut(head, " ")
	if ok && method != "" && strings.HasPrefix(rest, "/") {
		path, _, _ := strings.Cut(rest, " ")
		path, _, _ = strings.Cut(path, "?")
		fam = s.familyForPath(path)
	}
	k := httpkit.ErrKind{Kind: httpkit.KindInvalidRequest, Status: status, Detail: msg}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		k.Kind, k.Detail = httpkit.KindHeaderTooLarge, "the request line and headers are larger than the daemon's limit (--max-header-bytes)"
	}
	rec := &bufferedAnswer{header: http.Header{}}
	fam.Render(rec, k)
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", rec.status, http.StatusText(rec.status))
	rec.header.Del("Content-Length")
	rec.header.Write(&b)
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", rec.body.Len())
	b.Write(rec.body.Bytes())
	return b.Bytes()
}

// bufferedAnswer is the http.ResponseWriter a family renders a pre-routing
// refusal into.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *bufferedAnswer) Header() http.Header { return a.header }
func (a *bufferedAnswer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}
func (a *bufferedAnswer) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(p)
}
