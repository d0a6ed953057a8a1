package rest

import (
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

type healthResponse struct {
	Status string `json:"status"`
	// Version is the daemon's build (Version): module version, VCS
	// revision and time, "dirty" for a build from a modified tree.
	Version string `json:"version"`
	// UptimeSeconds is how long the server has served (KEP-539.2's
	// HealthResponse).
	UptimeSeconds int64 `json:"uptime_seconds"`
	// Code and Message are the 503's reason in KEP-539.2's error shape
	// ({code, message}), beside sandfs's own fields, so that a client of
	// either reads it.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Watch is "degraded" when a sandbox's kernel watch hit the inotify
	// watch limit (absent otherwise); Degraded names those sandboxes.
	Watch    string   `json:"watch,omitempty"`
	Degraded []string `json:"degraded,omitempty"`
	// Roots names the sandboxes whose root directory was removed or moved
	// away underneath the daemon (core.Sandbox.RootState), absent otherwise.
	Roots map[string]string `json:"roots,omitempty"`
	// History is what keeps a sandbox's journal from storing events ("state
	// disk full", or the database's error), absent while none is kept
	// from it; Histories says it per sandbox. The answer is then 503:
	// changes that grow the tree are refused until it passes.
	History   string            `json:"history,omitempty"`
	Histories map[string]string `json:"histories,omitempty"`
	// Unmounted names each sandbox's mountpoints whose FUSE mirror was
	// unmounted behind the daemon's back (umount -l): the files are still
	// served over HTTP; a restart mounts them again.
	Unmounted map[string][]string `json:"unmounted,omitempty"`
}

// health answers GET /health and /v1/health: the daemon is up (still "ok"
// with a degraded watch: the files are served), or 503 "degraded" while a
// journal cannot store what it is told, or 503 "stopping" once the daemon
// has begun to stop (EndStreams), so that a readiness probe (KEP-539.2's
// /v1/health) takes it out of service before it closes.
func (s *Server) health(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	h := healthResponse{Status: "ok", Version: Version(), UptimeSeconds: s.uptime()}
	if s.stopping() {
		h.Status, h.Code, h.Message = "stopping", "UNAVAILABLE", shutdownReason
		return httpkit.WriteJSON(w, http.StatusServiceUnavailable, h)
	}
	s.reg.each(func(name string, sb *core.Sandbox) {
		if sb.Watch().Degraded() {
			h.Degraded = append(h.Degraded, name)
		}
		if st := sb.RootState(); st != "ok" {
			if h.Roots == nil {
				h.Roots = map[string]string{}
			}
			h.Roots[name] = st
		}
		if s.unmounted != nil {
			if gone := s.unmounted(name); len(gone) > 0 {
				if h.Unmounted == nil {
					h.Unmounted = map[string][]string{}
				}
				h.Unmounted[name] = gone
			}
		}
		if t := sb.HistoryTrouble(); t != "" {
			if h.Histories == nil {
				h.Histories = map[string]string{}
			}
			h.Histories[name] = t
			if h.History == "" || t < h.History {
				h.History = t // one, whatever the map's order
			}
		}
	})
	if len(h.Degraded) > 0 {
		h.Watch = "degraded"
		sort.Strings(h.Degraded)
	}
	if h.History != "" {
		h.Status, h.Code, h.Message = "degraded", "UNAVAILABLE", "a sandbox's journal cannot store events: "+h.History
		return httpkit.WriteJSON(w, http.StatusServiceUnavailable, h)
	}
	return httpkit.WriteJSON(w, http.StatusOK, h)
}

// ping answers GET /v1/ping: the daemon serves, whatever its sandboxes'
// state (a liveness probe restarts what fails it, which a full disk does
// not need).
func (s *Server) ping(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return httpkit.WriteJSON(w, http.StatusOK, healthResponse{Status: "ok", Version: Version(), UptimeSeconds: s.uptime()})
}

// uptime is how long, in whole seconds, the server has been made.
func (s *Server) uptime() int64 { return int64(time.Since(s.started).Seconds()) }

// Version describes this build from runtime/debug's build info, as
// "sandfs VERSION [REVISION TIME] [dirty]": the main module's version
// ("(devel)" for a build from a work tree), the VCS revision (12 hex
// digits) and commit time that "go build" stamps, and "dirty" when the tree
// had uncommitted changes. "sandfs version" and GET /health print it.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "sandfs (unknown build)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{"sandfs", v}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	for _, s := range []string{rev, at} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if dirty {
		parts = append(parts, "dirty")
	}
	return strings.Join(parts, " ")
}
