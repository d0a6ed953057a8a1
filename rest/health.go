package rest

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/julienschmidt/httprouter"
)

type healthResponse struct {
	Status string `json:"status"`
	// Watch is "degraded" when a sandbox's kernel watch hit the inotify
	// watch limit (absent otherwise); Degraded names those sandboxes.
	Watch    string   `json:"watch,omitempty"`
	Degraded []string `json:"degraded,omitempty"`
	// Roots names the sandboxes whose root directory was removed or moved
	// away underneath the daemon (core.Sandbox.RootState), absent otherwise.
	Roots map[string]string `json:"roots,omitempty"`
}

// health answers GET /health, /v1/health and /v1/ping: the daemon is up
// (still "ok" with a degraded watch: the files are served).
func (s *Server) health(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	h := healthResponse{Status: "ok"}
	for name, sb := range s.sandboxes {
		if sb.WatchDegraded() {
			h.Degraded = append(h.Degraded, name)
		}
		if st := sb.RootState(); st != "ok" {
			if h.Roots == nil {
				h.Roots = map[string]string{}
			}
			h.Roots[name] = st
		}
	}
	if len(h.Degraded) > 0 {
		h.Watch = "degraded"
		sort.Strings(h.Degraded)
	}
	return writeJSON(w, http.StatusOK, h)
}

// writeJSON encodes v as the whole answer.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.Header()["Content-Type"] = ctJSON
	w.WriteHeader(status)
	w.Write(b)
	return nil
}
