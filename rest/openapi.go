package rest

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

// openapiJSON is the OpenAPI 3.1 document of every route in the table. A
// test holds it to the table and to real responses.
//
//go:embed openapi.json
var openapiJSON []byte

// openapiDoc answers GET /openapi.json.
func (s *Server) openapiDoc(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(openapiJSON)))
	w.WriteHeader(http.StatusOK)
	w.Write(openapiJSON)
	return nil
}
