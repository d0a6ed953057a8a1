package rest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The query helpers every family uses. A family refuses a bad parameter in
// its own dialect, which the helpers take as a parameter.

// dialect is how a family reads and refuses a query parameter.
type dialect int

const (
	// plainDialect is the sandbox-agent and named families': a bad
	// parameter is a 400 invalid_request, a boolean is what
	// strconv.ParseBool reads.
	plainDialect dialect = iota
	// aioDialect is the AIO family's: a bad parameter is a 422 validation
	// error worded as pydantic words it, a boolean is what pydantic reads.
	aioDialect
)

// missing is the refusal of a required parameter that is absent.
func (d dialect) missing(name string) error {
	if d == aioDialect {
		return invalidField("query."+name, "missing", "Field required")
	}
	return invalidRequest("missing required query parameter %q", name)
}

// parseBool reads a boolean value; ok is false when it is not one.
func (d dialect) parseBool(v string) (b, ok bool) {
	if d == aioDialect {
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

func (d dialect) notBool(name, v string) error {
	if d == aioDialect {
		return invalidField("query."+name, "bool_parsing", "Input should be a valid boolean, unable to interpret input %q", v)
	}
	return invalidRequest("query parameter %q must be true or false, got %q", name, v)
}

func (d dialect) notInt(name, v string) error {
	if d == aioDialect {
		return invalidField("query."+name, "int_parsing", "Input should be a valid integer, got %q", v)
	}
	return invalidRequest("query parameter %q must be an integer, got %q", name, v)
}

// query parses the query string strictly: a malformed one is a 400, not
// silently half-read.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidRequest("malformed query string: %v", err)
	}
	if err := checkQueryUTF8(q); err != nil {
		return nil, err // names.go
	}
	return q, nil
}

// requiredQuery returns the query parameter name, which must be present.
// An empty or NUL-carrying path is left to core, which refuses it (EINVAL).
func requiredQuery(q url.Values, name string, d dialect) (string, error) {
	if _, ok := q[name]; !ok {
		return "", d.missing(name)
	}
	return q.Get(name), nil
}

// boolQuery reads an optional boolean query parameter (def when absent).
func boolQuery(q url.Values, name string, def bool, d dialect) (bool, error) {
	if _, ok := q[name]; !ok {
		return def, nil
	}
	b, ok := d.parseBool(q.Get(name))
	if !ok {
		return def, d.notBool(name, q.Get(name))
	}
	return b, nil
}

// intQuery reads an optional integer query parameter (nil when absent).
func intQuery[T int | int64](q url.Values, name string, d dialect) (*T, error) {
	if _, ok := q[name]; !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(q.Get(name), 10, 64)
	if err != nil {
		return nil, d.notInt(name, q.Get(name))
	}
	v := T(n)
	return &v, nil
}
