// Package httpkittest holds what the tests of the route families share
// about the kit: the fuzz of a family's JSON decode helper. It imports
// only httpkit (and testing); no production package imports it.
package httpkittest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"sandfs/rest/httpkit"
)

// DecodeTarget is one request type a family's routes decode.
type DecodeTarget struct {
	Name    string
	New     func() any // a new value to decode into
	EmptyOK bool       // an empty body is taken (the fields' defaults)
}

// Decoder is a family's decode helper: the request's body into v, at
// most limit bytes; emptyOK as the target's.
type Decoder func(w http.ResponseWriter, r *http.Request, limit int64, v any, emptyOK bool) error

// decodeSeeds are bodies of every shape the routes meet.
var decodeSeeds = []string{`{}`, `{"path":"/a"}`, `{"from":"a","to":"b","overwrite":true}`, `{"path":1}`, `{"uid":"root","gid":0}`,
	`{"mode":"0755","recursive":true}`, `[]`, `null`, `"x"`, `{"path":"a"} {}`, `{"path":"\u0000"}`, `{"timeout":1e999}`,
	`{"view_range":[1,-1]}`, `{"exclude":null,"include_patterns":["*"]}`, `{"cursor":-1,"limit":99999999999999999999}`, "", `{`, "\xff"}

// FuzzDecode feeds any body, announced and chunked, to decode for each
// target: a body is either taken (and then it was one valid JSON value,
// an object, within the limit, or empty where the target allows it) or
// refused with a 4xx; never a 5xx, never a panic.
func FuzzDecode(f *testing.F, decode Decoder, targets []DecodeTarget) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	const limit = 1 << 10
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dt := range targets {
			for _, chunked := range []bool{false, true} {
				var rd io.Reader = bytes.NewReader(body)
				if chunked {
					rd = io.MultiReader(rd)
				}
				req := httptest.NewRequest("POST", "/", rd)
				req.Host = "127.0.0.1"
				req.Header.Set("Content-Type", "application/json")
				if chunked {
					req.ContentLength = -1
				}
				v := dt.New()
				err := decode(httptest.NewRecorder(), req, limit, v, dt.EmptyOK)
				if err == nil {
					if len(bytes.TrimSpace(body)) == 0 {
						if !dt.EmptyOK {
							t.Fatalf("%s: an empty body was taken", dt.Name)
						}
						continue
					}
					if !json.Valid(body) || len(body) > limit {
						t.Fatalf("%s: took %q, not one valid JSON value within the limit", dt.Name, body)
					}
					if k := reflect.ValueOf(v).Elem().Kind(); k != reflect.Struct {
						t.Fatalf("%s: decoded into a %v", dt.Name, k)
					}
					continue
				}
				k := httpkit.Classify(err)
				if k.Status < 400 || k.Status >= 500 || k.Internal {
					t.Fatalf("%s: body %q: %v classified %d (internal %v)", dt.Name, body, err, k.Status, k.Internal)
				}
			}
		}
	})
}
