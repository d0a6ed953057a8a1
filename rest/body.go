package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
)

// jsonFailure says what is wrong with a JSON request body, for each family
// to word in its own dialect (decodeJSON, decodeAIO).
type jsonFailure struct {
	what   jsonWrong
	offset int64        // jsonSyntax: the byte the decoder stopped at
	err    error        // jsonSyntax: the decoder's error
	field  string       // jsonFieldType: the dotted field, "" for the body itself
	typ    reflect.Type // jsonFieldType: the Go type the field wants
	value  string       // jsonFieldType: the JSON type it holds
}

type jsonWrong int

const (
	jsonEmpty     jsonWrong = iota // no value at all
	jsonTruncated                  // the value ends before it is whole
	jsonSyntax                     // malformed JSON
	jsonFieldType                  // a value of the wrong type (the body itself when field is "")
	jsonTrailing                   // more after the one value
)

func (f *jsonFailure) Error() string {
	switch f.what {
	case jsonEmpty:
		return "request body is empty"
	case jsonTruncated:
		return "request body: unexpected end of input"
	case jsonSyntax:
		return fmt.Sprintf("request body: malformed JSON at byte %d: %v", f.offset, f.err)
	case jsonFieldType:
		return fmt.Sprintf("request body: field %q holds %s", f.field, f.value)
	}
	return "request body: unexpected data after the JSON object"
}

// decodeBody decodes a JSON request body of at most limit bytes holding
// exactly one value into v. An empty body leaves v as it is when emptyOK. A
// body that is not JSON of v's shape is a *jsonFailure for the family to
// word; a wrong media type is a 415, a body over the limit a 413
// (*http.MaxBytesError when it only shows in reading), a failure reading
// it a *bodyError.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, emptyOK bool) error {
	if err := requireJSON(r); err != nil {
		return err
	}
	if r.ContentLength > limit {
		return tooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, limit)
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
			return &jsonFailure{what: jsonTrailing}
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
		return &jsonFailure{what: jsonEmpty}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &jsonFailure{what: jsonTruncated}
	case errors.As(err, &se):
		return &jsonFailure{what: jsonSyntax, offset: se.Offset, err: se}
	case errors.As(err, &ute):
		return &jsonFailure{what: jsonFieldType, field: ute.Field, typ: ute.Type, value: ute.Value}
	}
	return &bodyError{err}
}
