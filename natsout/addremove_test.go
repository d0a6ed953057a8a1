package natsout

import (
	"context"
	"testing"
	"time"

	"sandfs/natsout/natstest"
)

// TestAddRemove: a sandbox added after Start is published, from its kept
// cursor; one removed stops being published (its cursor kept), and added
// again resumes after it, publishing nothing twice.
func TestAddRemove(t *testing.T) {
	b := natstest.Start(t)
	p, err := Start(context.Background(), Config{URL: b.URL(), Host: "h"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a := sandbox(t, "late")
	burst(t, a.Journal, 0, 5, time.Second)
	if err := p.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := p.Add(a); err == nil {
		t.Error("a second Add of one name was taken")
	}
	if err := p.Add(Source{Name: "nometa", Journal: a.Journal}); err == nil {
		t.Error("a source with no durable journal was taken")
	}
	check(t, waitCount(t, b, 5), "h", map[string]int{"late": 5})
	p.Remove("late")
	p.Remove("late") // twice: nothing to do
	if st := p.Stats(); len(st) != 0 {
		t.Errorf("published after Remove: %v", st)
	}
	burst(t, a.Journal, 5, 5, time.Second)
	time.Sleep(300 * time.Millisecond)
	if n := b.Count(StreamName); n != 5 {
		t.Errorf("%d messages after Remove, want 5", n)
	}
	if err := p.Add(a); err != nil {
		t.Fatal(err)
	}
	check(t, waitCount(t, b, 10), "h", map[string]int{"late": 10})
}
