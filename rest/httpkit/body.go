package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
)

// JSONFailure says what is wrong with a JSON request body, for each family
// to word in its own dialect (DecodeJSON, rest/aio's decodeAIO).
type JSONFailure struct {
	What   JSONWrong
	Offset int64        // JSONSyntax: the byte the decoder stopped at
	Err    error        // JSONSyntax: the decoder's error
	Field  string       // JSONFieldType: the dotted field, "" for the body itself
	Type   reflect.Type // JSONFieldType: the Go type the field wants
	Value  string       // JSONFieldType: the JSON type it holds
}

type JSONWrong int

const (
	JSONEmpty     JSONWrong = iota // no value at all
	JSONTruncated                  // the value ends before it is whole
	JSONSyntax                     // malformed JSON
	JSONFieldType                  // a value of the wrong type (the body itself when field is "")
	JSONTrailing                   // more after the one value
)

func (f *JSONFailure) Error() string {
	switch f.What {
	case JSONEmpty:
		return "request body is empty"
	case JSONTruncated:
		return "request body: unexpected end of input"
	case JSONSyntax:
		return fmt.Sprintf("request body: malformed JSON at byte %d: %v", f.Offset, f.Err)
	case JSONFieldType:
		return fmt.Sprintf("request body: field %q holds %s", f.Field, f.Value)
	}
	return "request body: unexpected data after the JSON object"
}

// DecodeBody decodes a JSON request body of at most limit bytes holding
// exactly one value into v. An empty body leaves v as it is when emptyOK. A
// body that is not JSON of v's shape is a *JSONFailure for the family to
// word; a wrong media type is a 415, a body over the limit a 413
// (*http.MaxBytesError when it only shows in reading), a failure reading
// it a *BodyError.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, emptyOK bool) error {
	if err := RequireJSON(r); err != nil {
		return err
	}
	if r.ContentLength > limit {
		return TooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, limit)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	err := dec.Decode(v)
	if err == io.EOF && emptyOK {
		return nil
	}
	if err == nil {
		if _, err = dec.Token(); err == io.EOF {
			return nil
		} else if err == nil {
			return &JSONFailure{What: JSONTrailing}
		}
	}
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case err == io.EOF:
		return &JSONFailure{What: JSONEmpty}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &JSONFailure{What: JSONTruncated}
	case errors.As(err, &se):
		return &JSONFailure{What: JSONSyntax, Offset: se.Offset, Err: se}
	case errors.As(err, &ute):
		return &JSONFailure{What: JSONFieldType, Field: ute.Field, Type: ute.Type, Value: ute.Value}
	}
	return &BodyError{Err: err}
}

// RequireJSON refuses a request body that does not say it is JSON. A
// request with neither a body nor a Content-Type passes (the decoder then
// says the body is empty, or an optional body takes its defaults).
func RequireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && (r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody) {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	if ct == "" {
		return UnsupportedMedia("the request body has no Content-Type; want application/json")
	}
	return UnsupportedMedia("content-type must be application/json, got %q", ct)
}
