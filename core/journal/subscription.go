package journal

import "sync/atomic"

// Subscription is a live, bounded feed of the events a filter accepts.
type Subscription struct {
	C       <-chan Event
	ch      chan Event
	j       *Journal
	match   func(Event) bool
	dropped atomic.Uint64
}

// Subscribe opens a feed of the events match accepts (nil: all), with room
// for buf events. match runs under the journal's lock: keep it cheap and
// never call the journal from it. A reader that falls behind loses events;
// TakeDropped says how many. Like a watcher, it hears only Reportable
// events.
func (j *Journal) Subscribe(match func(Event) bool, buf int) *Subscription {
	if buf <= 0 {
		buf = 1
	}
	s := &Subscription{ch: make(chan Event, buf), j: j, match: match}
	s.C = s.ch
	j.mu.Lock()
	j.subs[s] = struct{}{}
	j.mu.Unlock()
	return s
}

func (s *Subscription) offer(e Event) {
	e, ok := Reportable(e) // names.go
	if !ok || (s.match != nil && !s.match(e)) {
		return
	}
	select {
	case s.ch <- e:
	default:
		s.dropped.Add(1)
		s.j.dropped.Add(1)
	}
}

func (s *Subscription) markLost() { s.dropped.Add(1) }

// TakeDropped returns how many events were lost since the last call.
func (s *Subscription) TakeDropped() uint64 { return s.dropped.Swap(0) }

// Close ends the feed and closes C (Append sends under the journal's lock,
// so none can follow). Closing twice is fine.
func (s *Subscription) Close() {
	s.j.mu.Lock()
	defer s.j.mu.Unlock()
	if _, ok := s.j.subs[s]; ok {
		delete(s.j.subs, s)
		close(s.ch)
	}
}
