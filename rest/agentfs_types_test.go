package rest

import (
	"testing"

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
