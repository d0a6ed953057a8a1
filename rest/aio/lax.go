package aio

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"sandfs/rest/httpkit"
)

// The AIO 1.x server is FastAPI, whose models validate in pydantic's lax
// mode: a field of a number type takes the string "2" and a float with no
// fraction, a bool takes "true", "yes", "1" and the numbers 0 and 1, and
// so on. Clients of that product send such values (a form turned into
// JSON, a shell script), so the /v1/file routes take them too; /v2 and the
// other families stay strict. A value lax mode refuses is the same 422.

// laxMaxFixes bounds the fields one body may have coerced.
const laxMaxFixes = 32

// decodeLax is httpkit.DecodeBody for the /v1/file routes: the body is read (up
// to limit), decoded, and each top-level field of the wrong type that lax
// mode converts is converted and the body decoded again.
func decodeLax(w http.ResponseWriter, r *http.Request, limit int64, v any, emptyOK bool) error {
	if err := httpkit.RequireJSON(r); err != nil {
		return err
	}
	if r.ContentLength > limit {
		return httpkit.TooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return err
	}
	for fixes := 0; ; fixes++ {
		r.Body = io.NopCloser(bytes.NewReader(body))
		err := httpkit.DecodeBody(w, r, limit, v, emptyOK)
		var jf *httpkit.JSONFailure
		if !errors.As(err, &jf) || jf.What != httpkit.JSONFieldType || jf.Field == "" || strings.Contains(jf.Field, ".") || fixes == laxMaxFixes {
			return err
		}
		fixed, ok := laxField(body, jf.Field, jf.Type)
		if !ok {
			return err
		}
		body = fixed
	}
}

// laxField is body with its top-level field converted to typ as lax mode
// converts it, or false when lax mode refuses it too.
func laxField(body []byte, field string, typ reflect.Type) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	raw, ok := m[field]
	if !ok {
		return nil, false
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	v, ok := laxValue(raw, typ.Kind())
	if !ok {
		return nil, false
	}
	m[field] = v
	out, err := json.Marshal(m)
	return out, err == nil
}

// laxValue converts the JSON value raw to the kind k as pydantic's lax
// mode does: a string holding a number to a number, a float with no
// fraction to an int, a bool to 0 or 1, a string or 0 or 1 to a bool.
func laxValue(raw json.RawMessage, k reflect.Kind) (json.RawMessage, bool) {
	var s string
	isString := json.Unmarshal(raw, &s) == nil
	s = strings.TrimSpace(s)
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var f float64
		switch {
		case isString:
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return json.RawMessage(strconv.FormatInt(n, 10)), true
			}
			var err error
			if f, err = strconv.ParseFloat(s, 64); err != nil {
				return nil, false
			}
		case string(raw) == "true":
			return json.RawMessage("1"), true
		case string(raw) == "false":
			return json.RawMessage("0"), true
		default:
			if json.Unmarshal(raw, &f) != nil {
				return nil, false
			}
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
			return nil, false // "int_from_float": a fraction is refused
		}
		return json.RawMessage(strconv.FormatInt(int64(f), 10)), true
	case reflect.Float32, reflect.Float64:
		if !isString {
			return nil, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, false
		}
		return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64)), true
	case reflect.Bool:
		if !isString {
			s = string(raw) // the numbers 0 and 1
		}
		switch strings.ToLower(s) {
		case "1", "on", "t", "true", "y", "yes":
			return json.RawMessage("true"), true
		case "0", "off", "f", "false", "n", "no":
			return json.RawMessage("false"), true
		}
	}
	return nil, false
}
