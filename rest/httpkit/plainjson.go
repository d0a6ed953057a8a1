package httpkit

import (
	"errors"
	"net/http"
	"reflect"
)

// DecodeJSON decodes a request body of at most limit bytes holding exactly
// one JSON value into v (DecodeBody), turning every failure into a 400 that
// says what is wrong (or a 413): the sandbox-agent and named families'
// wording.
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	err := DecodeBody(w, r, limit, v, false)
	var jf *JSONFailure
	if !errors.As(err, &jf) {
		return err
	}
	return PlainJSONError(jf)
}

// plainJSONError words a JSON failure as a 400 of the sandbox-agent and
// named families.
func PlainJSONError(jf *JSONFailure) error {
	switch jf.What {
	case JSONEmpty:
		return InvalidRequest("request body is empty; want a JSON object")
	case JSONTruncated:
		return InvalidRequest("request body: malformed JSON: unexpected end of input")
	case JSONSyntax:
		return InvalidRequest("request body: malformed JSON at byte %d: %v", jf.Offset, jf.Err)
	case JSONFieldType:
		if jf.Field == "" {
			return InvalidRequest("request body must be a JSON object, got %s", jf.Value)
		}
		return InvalidRequest("request body: field %q must be %s, got %s", jf.Field, jsonTypeName(jf.Type), jf.Value)
	}
	return InvalidRequest("request body: unexpected data after the JSON object")
}

func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a number"
}
