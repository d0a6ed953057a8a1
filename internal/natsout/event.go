package natsout

import (
	"strings"
	"time"

	"sandfs/core/journal"
)

// Message is an event as it travels on the stream: the named family's event
// (rest/named_events.go's wsEventFields; copied, since this package may not
// import rest) with host and sandbox.
type Message struct {
	Host         string  `json:"host"`
	Sandbox      string  `json:"sandbox"`
	Seq          uint64  `json:"seq"`
	Type         string  `json:"type"`
	Path         string  `json:"path"`
	OldPath      string  `json:"oldPath,omitempty"`
	IsDir        bool    `json:"isDir"`
	Size         int64   `json:"size"`
	Timestamp    string  `json:"timestamp"`
	Origin       string  `json:"origin"`
	Actor        string  `json:"actor,omitempty"`
	Pid          *uint32 `json:"pid,omitempty"`
	Uid          *uint32 `json:"uid,omitempty"`
	Comm         string  `json:"comm,omitempty"`
	Cgroup       string  `json:"cgroup,omitempty"`
	FoundAtStart bool    `json:"foundAtStart,omitempty"`
}

func message(host, sandbox string, e journal.Event) Message {
	m := Message{Host: host, Sandbox: sandbox, Seq: e.Seq, Type: string(e.Type), Path: e.Path, OldPath: e.OldPath,
		IsDir: e.IsDir, Size: e.Size, Timestamp: e.Time.UTC().Format(time.RFC3339Nano), Origin: string(e.Origin),
		Actor: e.Actor, Comm: e.Comm, Cgroup: e.Cgroup, FoundAtStart: e.FoundAtStart}
	if e.Origin == journal.Mirror {
		pid, uid := e.Pid, e.Uid
		m.Pid, m.Uid = &pid, &uid
	}
	return m
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
