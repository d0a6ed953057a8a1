package rest

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// The web console (GET /ui/): one page, its script and its style sheet,
// embedded in the binary and served from it; nothing is loaded from
// elsewhere, and the Content-Security-Policy below holds the page to that.
// The page carries no data, so its routes are public; everything it shows
// comes from the authed public API (the named-sandbox family for files,
// SSE /v2/watch/{id}/events or the §5 websocket for the feed, opened with
// the journal's /events; checkpoints, changes and restore for history.js),
// with the
// token taken from the fragment of the URL the daemon logs (/ui/#token=T,
// which no server or proxy ever sees; the script removes it from the
// address bar) or typed once, kept in sessionStorage.
//
// Each file has its own line in the route table (GET /ui/, /ui/app.js,
// /ui/history.js, /ui/highlight.js, /ui/linediff.js, /ui/usage.js,
// /ui/style.css), so the table stays the one list of what the daemon
// serves; httprouter's trailing-slash redirect answers GET /ui with a 301 to
// /ui/, and any other /ui/x is the router's 404. ui_test.go checks that every
// embedded file has its line.
//
//go:embed ui
var uiFiles embed.FS

// uiTypes are the content types of the console's files, by extension.
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
func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	name := strings.TrimPrefix(r.URL.Path, "/ui/")
	if name == "" {
		name = "index.html"
	}
	b, err := uiFiles.ReadFile("ui/" + name)
	if err != nil { // a table line without its file: a build mistake
		return &requestError{kindRouteNotFound, http.StatusNotFound, "no console file " + name}
	}
	h := w.Header()
	h.Set("Content-Type", uiTypes[path.Ext(name)])
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
