package daemon

import (
	"log/slog"

	"sandfs/core"
)

// logEvents logs each event of sb's journal until stop (--log-events).
func logEvents(name string, sb *core.Sandbox, log *slog.Logger) (stop func()) {
	sub := sb.Journal().Subscribe(nil, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range sub.C {
			if n := sub.TakeDropped(); n > 0 {
				log.Warn("event log fell behind", "sandbox", name, "dropped", n)
			}
			attrs := []any{"sandbox", name, "seq", e.Seq, "type", string(e.Type), "path", e.Path,
				"old_path", e.OldPath, "origin", string(e.Origin), "pid", e.Pid, "uid", e.Uid}
			for _, kv := range [...][2]string{{"actor", e.Actor}, {"comm", e.Comm}, {"cgroup", e.Cgroup}} {
				if kv[1] != "" { // who acts, where known (an older reader's line is unchanged)
					attrs = append(attrs, kv[0], kv[1])
				}
			}
			log.Info("event", attrs...)
		}
	}()
	return func() { sub.Close(); <-done }
}
