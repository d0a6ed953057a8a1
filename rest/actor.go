package rest

import (
	"net/http"
	"unicode"
	"unicode/utf8"

	"sandfs/core"
	"sandfs/core/journal"
)

// actorHeader names who acts for a request: free text (an agent, a session,
// a tool call) that every event the request makes keeps (api.md §6).
const actorHeader = "X-Sandfs-Actor"

// maxActorBytes bounds the header's value.
const maxActorBytes = 128

// withActor stamps r's context with the actor its header names, or refuses
// the header (400 invalid_request, before the handler: nothing changes).
// Refused: a value over 128 bytes, one that is not UTF-8, one with a
// control character (C0 including tab, DEL, C1) or a bidirectional control
// (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C: they reorder how
// a log line reads), and the header given twice. An empty value is no
// actor, as without the header.
func withActor(r *http.Request) (*http.Request, error) {
	vs := r.Header.Values(actorHeader)
	if len(vs) == 0 {
		return r, nil
	}
	if len(vs) > 1 {
		return r, invalidRequest("%s is given %d times; give it once", actorHeader, len(vs))
	}
	v := vs[0]
	if err := checkActor(v); err != nil {
		return r, err
	}
	if v == "" {
		return r, nil
	}
	return r.WithContext(core.WithActor(r.Context(), core.Actor{Origin: journal.API, Name: v})), nil
}

func checkActor(v string) error {
	if len(v) > maxActorBytes {
		return invalidRequest("%s is %d bytes; at most %d", actorHeader, len(v), maxActorBytes)
	}
	if !utf8.ValidString(v) {
		return invalidRequest("%s is not valid UTF-8", actorHeader)
	}
	for i, c := range v {
		if unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c) {
			return invalidRequest("%s has a control character (%U at byte %d); give printable text", actorHeader, c, i)
		}
	}
	return nil
}
