package rest

import (
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

type healthResponse struct {
	Status string `json:"status"`
}

// health answers GET /health, /v1/health and /v1/ping: the daemon is up.
func (s *Server) health(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	return writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
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
