package checkpoint

import (
	"context"
	"fmt"
	"strings"

	"sandfs/core"
	"sandfs/core/journal"
)

// actorChanges is what the journal says one actor changed after a
// checkpoint: the seq of its last event on each path, and the newest
// event of anyone else on each path.
type actorChanges struct {
	name  string
	last  map[string]uint64
	other map[string]journal.Event
}

// changesBy reads the journal after seq for the paths actor changed.
func changesBy(ctx context.Context, s *core.Sandbox, actor string, seq uint64) (*actorChanges, error) {
	a := &actorChanges{name: actor, last: map[string]uint64{}, other: map[string]journal.Event{}}
	lost, err := s.Journal().Scan(ctx, seq, func(e journal.Event) bool {
		for _, p := range []string{e.Path, e.OldPath} {
			if p == "" {
				continue
			}
			if actorMatches(e, actor) {
				a.last[p] = e.Seq
			} else if o, ok := a.other[p]; !ok || e.Seq > o.Seq {
				a.other[p] = e
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if lost {
		return nil, fmt.Errorf("restore by actor %q: %w", actor, ErrJournalLost)
	}
	return a, nil
}

// actorMatches reports whether e was made by actor: an api event of that
// X-Sandfs-Actor, or with "fuse:COMM" a mount event of that command.
func actorMatches(e journal.Event, actor string) bool {
	if comm, ok := strings.CutPrefix(actor, "fuse:"); ok && e.Origin == journal.Mirror && e.Comm == comm {
		return true
	}
	return e.Origin == journal.API && e.Actor == actor
}

// ActorOf is how a restore's skip names who made e: "api:NAME" ("api"
// unnamed), "fuse:COMM[PID]", "external".
func ActorOf(e journal.Event) string {
	switch e.Origin {
	case journal.API:
		if e.Actor == "" {
			return "api"
		}
		return "api:" + e.Actor
	case journal.Mirror:
		return fmt.Sprintf("fuse:%s[%d]", e.Comm, e.Pid)
	}
	return string(e.Origin)
}

// owns tells whether the actor changed ap (or a directory above it, whose
// subtree it then answers for), and the conflict when someone else
// changed ap, or that directory, after the actor's last event there.
func (a *actorChanges) owns(ap string) (bool, *RestoreSkip) {
	at, seq, ok := ap, a.last[ap], false
	if seq != 0 {
		ok = true
	} else {
		ancestors(ap, func(d string) bool {
			if s, found := a.last[d]; found {
				at, seq, ok = d, s, true
				return false
			}
			return true
		})
	}
	if !ok {
		return false, nil
	}
	for _, p := range []string{ap, at} {
		if o, found := a.other[p]; found && o.Seq > seq {
			by := ActorOf(o)
			return true, &RestoreSkip{Path: ap, By: by, Reason: fmt.Sprintf("changed by %s after %s", by, a.name)}
		}
	}
	return true, nil
}
