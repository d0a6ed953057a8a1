package httpkit

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"sandfs/core"
	"sandfs/core/journal"
)

// actorHeader names who acts for a request: free text (an agent, a session,
// a tool call) that every event the request makes keeps (api.md §6).
const ActorHeader = "X-Sandfs-Actor"

// maxActorBytes bounds the header's value.
const maxActorBytes = 128

// withActor stamps r's context with the actor its header names, or refuses
// the header (400 invalid_request, before the handler: nothing changes):
// what checkActor refuses, and the header given twice. An empty value is
// no actor, as without the header.
func WithActor(r *http.Request) (*http.Request, error) {
	vs := r.Header.Values(ActorHeader)
	if len(vs) == 0 {
		return r, nil
	}
	if len(vs) > 1 {
		return r, InvalidRequest("%s is given %d times; give it once", ActorHeader, len(vs))
	}
	v := vs[0]
	if err := CheckActor(ActorHeader, v); err != nil {
		return r, err
	}
	if v == "" {
		return r, nil
	}
	return r.WithContext(core.WithActor(r.Context(), core.Actor{Origin: journal.API, Name: v})), nil
}

// checkActor refuses an actor's name (field: the header, or a body field)
// that checkLabel refuses, one over 128 bytes, and one that wears a label
// of the daemon's own (reservedActor): an API write named "external"
// would pass for an outside one in the filters and the console.
func CheckActor(field, v string) error {
	if len(v) > maxActorBytes {
		return InvalidRequest("%s is %d bytes; at most %d", field, len(v), maxActorBytes)
	}
	if err := CheckLabel(field, v); err != nil {
		return err
	}
	if reservedActor(v) {
		return InvalidRequest("%s %q is a label of the daemon's own (api, external, fuse, mirror, fuse:…, restore:…); name the actor otherwise", field, v)
	}
	return nil
}

// checkLabel refuses text a person reads in a log line or the console (an
// actor, a checkpoint's name) that is not UTF-8 or holds a character that
// hides or changes what is read: a control character (C0 including tab,
// DEL, C1), a format character (Cf: the bidirectional controls, U+200B,
// U+FEFF, the tag characters U+E0000 to U+E007F), or a separator other
// than the space (U+2028, U+2029, U+00A0…), which make look-alikes.
func CheckLabel(field, v string) error {
	if !utf8.ValidString(v) {
		return InvalidRequest("%s is not valid UTF-8", field)
	}
	for i, c := range v {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || unicode.Is(unicode.Bidi_Control, c) || unicode.Is(unicode.Z, c) && c != ' ' {
			return InvalidRequest("%s has a control, format or separator character (%U at byte %d); give printable text", field, c, i)
		}
	}
	return nil
}

// reservedActor reports whether v is, or begins as, a label the daemon
// gives: the origins (api, external, fuse, mirror), the mirror's
// fuse:COMM and a restore's restore:ID, in any case.
func reservedActor(v string) bool {
	l := strings.ToLower(strings.TrimSpace(v))
	switch l {
	case "api", "external", "fuse", "mirror":
		return true
	}
	return strings.HasPrefix(l, "fuse:") || strings.HasPrefix(l, "restore:")
}
