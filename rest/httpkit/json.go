package httpkit

import (
	"encoding/json"
	"net/http"
)

// ctJSON is the Content-Type of a JSON answer: net/http never changes a
// header value slice, so one can serve all.
var JSONContentType = []string{"application/json"}

// writeJSON encodes v as the whole answer.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.Header()["Content-Type"] = JSONContentType
	w.WriteHeader(status)
	w.Write(b)
	return nil
}
