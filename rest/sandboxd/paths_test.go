package sandboxd

import "testing"

func TestEscapes(t *testing.T) {
	for p, want := range map[string]bool{
		"": false, "/": false, "/a": false, "/a/..": false, "/a/../b": false, "/./a/./..": false,
		"//a//..//": false, "/a/b/../../c": false, "/..a": false, "/a..": false, "/...": false,
		"/..": true, "..": true, "/../a": true, "/a/../..": true, "/a/b/../../../c": true, "//..//": true, "/./..": true,
	} {
		if got := escapes(p); got != want {
			t.Errorf("escapes(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	for status, want := range map[int]string{
		400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		405: "UNIMPLEMENTED", 409: "CONFLICT", 412: "FAILED_PRECONDITION", 413: "RESOURCE_EXHAUSTED",
		415: "INVALID_ARGUMENT", 416: "OUT_OF_RANGE", 421: "PERMISSION_DENIED", 431: "INVALID_ARGUMENT",
		500: "INTERNAL", 503: "UNAVAILABLE", 507: "RESOURCE_EXHAUSTED",
	} {
		if got := Code(status); got != want {
			t.Errorf("Code(%d) = %s, want %s", status, got, want)
		}
	}
}
