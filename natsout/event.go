package natsout

import (
	"strings"

	"sandfs/core/journal"
)

// Message is an event as it travels on the stream: the named family's event
// (journal.Fields, the shape of GET /v1/sandboxes/{name}/events) with host
// and sandbox.
type Message struct {
	Host    string `json:"host"`
	Sandbox string `json:"sandbox"`
	journal.Fields
}

func message(host, sandbox string, e journal.Event) Message {
	return Message{Host: host, Sandbox: sandbox, Fields: journal.FieldsOf(e)}
}

// Token is s made fit for one token of a subject: '.', '*', '>' and white
// space become '_' (a host name's dots would split it into tokens).
func Token(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}

// Subject is where an event of sandbox on host goes.
func Subject(host, sandbox string, t journal.Type) string {
	return "sandfs." + Token(host) + "." + Token(sandbox) + "." + Token(string(t))
}
