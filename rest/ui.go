package rest

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"sandfs/rest/httpkit"
)

// The web console (GET /ui/): one page, its module scripts and its style
// sheet, embedded in the binary and served from it; nothing is loaded from
// elsewhere, and the Content-Security-Policy below holds the page to that.
// The files carry no data, so their route is public; everything they show
// comes from the authed public API (the named-sandbox family for files,
// SSE /v2/watch/{id}/events or the §5 websocket for the feed, opened with
// the journal's /events; checkpoints, changes and restore for history),
// with the token taken from the fragment of the URL the daemon logs
// (/ui/#token=T, which no server or proxy ever sees; the script removes it
// from the address bar) or typed once, kept in sessionStorage.
//
// One route, GET /ui/*file, serves every embedded file, so a module added
// to the console needs no line of its own; what is not embedded, or has no
// content type below, is 404. httprouter's trailing-slash redirect answers
// GET /ui with a 301 to /ui/.
//
//go:embed ui
var uiFiles embed.FS

// uiTypes are the content types of the console's files, by extension; a
// file of any other extension is not served.
var uiTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// uiCSP allows the console to load only its own files and to talk only to
// its own daemon; images it shows and files it offers for download are
// blob: URLs made from authed fetches.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiAsset answers GET /ui/ (index.html) and GET /ui/<file> from the
// embedded files.
func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := strings.TrimPrefix(ps.ByName("file"), "/")
	// The catch-all takes any path under /ui/, dot segments and trailing
	// slashes included, before the router could clean it: redirect to the
	// clean path as the router does for its other routes, so that a file
	// has one address, unless nothing is there either.
	if p := r.URL.Path; p != "/ui/" {
		if c := path.Clean(p); c != p {
			if c == "/ui" {
				c = "/ui/"
			}
			if rest, under := strings.CutPrefix(c, "/ui/"); !under || uiServes(rest) {
				u := *r.URL
				u.Path = c
				http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
				return nil
			}
		}
	}
	b, ctype, ok := uiFile(name)
	if !ok {
		return &httpkit.RequestError{Kind: httpkit.KindRouteNotFound, Status: http.StatusNotFound, Msg: "no console file " + strconv.Quote(name)}
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(b)
	}
	return nil
}

// uiFile is the embedded file /ui/name names and its content type: "" is
// the page; index.html is not (the page has one address, /ui/), nor is a
// name of an extension without a type, or one that is not a clean
// relative path.
func uiFile(name string) (b []byte, ctype string, ok bool) {
	switch name {
	case "":
		name = "index.html"
	case "index.html":
		return nil, "", false
	}
	ctype, known := uiTypes[path.Ext(name)]
	if !known || !fs.ValidPath(name) {
		return nil, "", false
	}
	b, err := uiFiles.ReadFile("ui/" + name)
	return b, ctype, err == nil
}

func uiServes(name string) bool {
	_, _, ok := uiFile(name)
	return ok
}

// uiFileNames lists the embedded console files (for the tests).
func uiFileNames() []string {
	var out []string
	fs.WalkDir(uiFiles, "ui", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, "ui/"))
		}
		return nil
	})
	return out
}
