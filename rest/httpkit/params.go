package httpkit

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The query helpers every family uses. A family refuses a bad parameter in
// its own dialect, which the helpers take as a parameter.

// dialect is how a family reads and refuses a query parameter.
type Dialect int

const (
	// PlainDialect is the sandbox-agent and named families': a bad
	// parameter is a 400 invalid_request, a boolean is what
	// strconv.ParseBool reads.
	PlainDialect Dialect = iota
	// AIODialect is the AIO family's: a bad parameter is a 422 validation
	// error worded as pydantic words it, a boolean is what pydantic reads.
	AIODialect
)

// missing is the refusal of a required parameter that is absent.
func (d Dialect) Missing(name string) error {
	if d == AIODialect {
		return InvalidField("query."+name, "missing", "Field required")
	}
	return InvalidRequest("missing required query parameter %q", name)
}

// parseBool reads a boolean value; ok is false when it is not one.
func (d Dialect) ParseBool(v string) (b, ok bool) {
	if d == AIODialect {
		switch strings.ToLower(v) {
		case "true", "1", "yes", "on":
			return true, true
		case "false", "0", "no", "off":
			return false, true
		}
		return false, false
	}
	b, err := strconv.ParseBool(v)
	return b, err == nil
}

func (d Dialect) NotBool(name, v string) error {
	if d == AIODialect {
		return InvalidField("query."+name, "bool_parsing", "Input should be a valid boolean, unable to interpret input %q", v)
	}
	return InvalidRequest("query parameter %q must be true or false, got %q", name, v)
}

func (d Dialect) NotInt(name, v string) error {
	if d == AIODialect {
		return InvalidField("query."+name, "int_parsing", "Input should be a valid integer, got %q", v)
	}
	return InvalidRequest("query parameter %q must be an integer, got %q", name, v)
}

// query parses the query string strictly: a malformed one is a 400, not
// silently half-read.
func Query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, InvalidRequest("malformed query string: %v", err)
	}
	if err := CheckQueryUTF8(q); err != nil {
		return nil, err // names.go
	}
	return q, nil
}

// RequiredQuery returns the query parameter name, which must be present.
// An empty or NUL-carrying path is left to core, which refuses it (EINVAL).
func RequiredQuery(q url.Values, name string, d Dialect) (string, error) {
	if _, ok := q[name]; !ok {
		return "", d.Missing(name)
	}
	return q.Get(name), nil
}

// BoolQuery reads an optional boolean query parameter (def when absent).
func BoolQuery(q url.Values, name string, def bool, d Dialect) (bool, error) {
	if _, ok := q[name]; !ok {
		return def, nil
	}
	b, ok := d.ParseBool(q.Get(name))
	if !ok {
		return def, d.NotBool(name, q.Get(name))
	}
	return b, nil
}

// IntQuery reads an optional integer query parameter (nil when absent).
func IntQuery[T int | int64](q url.Values, name string, d Dialect) (*T, error) {
	if _, ok := q[name]; !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(q.Get(name), 10, 64)
	if err != nil {
		return nil, d.NotInt(name, q.Get(name))
	}
	v := T(n)
	return &v, nil
}
