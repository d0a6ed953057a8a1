package agentfs

import (
	"testing"
	"time"

	"sandfs/rest/httpkit"
)

func TestAgentTypeOf(t *testing.T) {
	cases := []struct {
		status int
		want   string
	}{
		{400, "invalid_request"}, {401, "token_invalid"}, {403, "permission_denied"}, {404, "not_found"},
		{405, "invalid_request"}, {409, "conflict"}, {413, "invalid_request"}, {415, "unsupported_media_type"},
		{500, "stream_error"}, {507, "stream_error"},
	}
	for _, c := range cases {
		if got := agentTypeOf(httpkit.ErrKind{Status: c.status}).name; got != c.want {
			t.Errorf("agentTypeOf(%d): got %s, want %s", c.status, got, c.want)
		}
	}
}

func TestChronoRFC3339(t *testing.T) {
	base := time.Date(2024, 5, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))
	cases := []struct {
		ns   int
		want string
	}{
		{0, "2024-05-01T09:00:00+00:00"},
		{120_000_000, "2024-05-01T09:00:00.120+00:00"},
		{123_456_000, "2024-05-01T09:00:00.123456+00:00"},
		{123_456_789, "2024-05-01T09:00:00.123456789+00:00"},
		{1, "2024-05-01T09:00:00.000000001+00:00"},
	}
	for _, c := range cases {
		if got := chronoRFC3339(base.Add(time.Duration(c.ns))); got != c.want {
			t.Errorf("chronoRFC3339(+%dns): got %q, want %q", c.ns, got, c.want)
		}
	}
}
