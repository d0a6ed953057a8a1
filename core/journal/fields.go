package journal

import "time"

// Fields is an event as JSON tells it outside the daemon: the named
// family's shape (GET /v1/sandboxes/{name}/events, the watch socket) and,
// with host and sandbox added, the fleet's stream on NATS JetStream
// (natsout). One type, so the two never drift apart.
type Fields struct {
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

// FieldsOf is e as Fields: pid and uid only for the mirror's events (where
// 0 is root, not unknown), the time in RFC 3339 with nanoseconds, UTC.
func FieldsOf(e Event) Fields {
	out := Fields{Seq: e.Seq, Type: string(e.Type), Path: e.Path, OldPath: e.OldPath, IsDir: e.IsDir, Size: e.Size,
		Timestamp: e.Time.UTC().Format(time.RFC3339Nano), Origin: string(e.Origin), Actor: e.Actor, Comm: e.Comm,
		Cgroup: e.Cgroup, FoundAtStart: e.FoundAtStart}
	if e.Origin == Mirror {
		pid, uid := e.Pid, e.Uid
		out.Pid, out.Uid = &pid, &uid
	}
	return out
}
