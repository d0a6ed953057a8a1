package watch

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The reader loop: one goroutine reads the kernel watches of every sandbox
// of the process, waiting on all their descriptors at once in one epoll
// instance. A host of many sandboxes, each with its own reader blocked in
// poll(2), paid for every change two or three thread wake-ups and as many
// runtime hand-offs of a blocked thread's processor (sysmon woke every
// 20 µs to retake them): writes spread over 100 sandboxes ran at half the
// rate of the same writes to one. One reader wakes for the events of many
// sandboxes at once, and gathers once for all of them (gather).
//
// The loop steps a notifier (step) when its inotify descriptor has events,
// when its wake-up eventfd was written (Interrupt: an outbox to append, a
// rename waiting for its pair), and when its pair's wait ends; every
// rootCheckEvery it checks every root. The loop runs while some notifier
// is registered, and ends with the last.

// watchLoop is the process's reader of kernel watches.
type watchLoop struct {
	mu      sync.Mutex
	epfd    int                     // while running
	wake    int                     // eventfd: ends the wait (a notifier gone)
	running bool                    // the goroutine runs, with epfd and wake open
	members map[int32]*notifier     // by inotify descriptor and by wake-up eventfd: each twice
	due     map[*notifier]time.Time // renames waiting for their pair, until then
}

var readers = &watchLoop{members: map[int32]*notifier{}, due: map[*notifier]time.Time{}}

// has reports whether n is registered. The lock is held.
func (l *watchLoop) has(n *notifier) bool {
	events, _ := n.in.Fds()
	return l.members[int32(events)] == n
}

// add registers n, whose first walk is done, starting the loop if it is
// not running.
func (l *watchLoop) add(n *notifier) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.running {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return err
		}
		wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			unix.Close(epfd)
			return err
		}
		if err := epollIn(epfd, wake); err != nil {
			unix.Close(epfd)
			unix.Close(wake)
			return err
		}
		l.epfd, l.wake, l.running = epfd, wake, true
		go l.run(epfd, wake)
	}
	events, wake := n.in.Fds()
	if err := epollIn(l.epfd, events); err != nil {
		return err
	}
	if err := epollIn(l.epfd, wake); err != nil {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, events, nil)
		return err
	}
	l.members[int32(events)], l.members[int32(wake)] = n, n
	return nil
}

// remove unregisters n before its descriptors are closed; the loop ends
// with the last notifier. A step of n already under way finds it closed
// (n.closed, under n.mu) and does nothing.
func (l *watchLoop) remove(n *notifier) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.has(n) {
		return
	}
	events, wake := n.in.Fds()
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, events, nil)
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, wake, nil)
	delete(l.members, int32(events))
	delete(l.members, int32(wake))
	delete(l.due, n)
	if len(l.members) == 0 {
		one := [8]byte{1}
		unix.Write(l.wake, one[:])
	}
}

func epollIn(epfd, fd int) error {
	return unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
}

// turn is a notifier the loop steps this time round, and whether its
// wake-up eventfd was written (to be cleared).
type turn struct {
	n     *notifier
	woken bool
}

// run is the loop. It closes epfd and wake when it ends, under the lock,
// so an add after that starts a new loop.
func (l *watchLoop) run(epfd, wake int) {
	events := make([]unix.EpollEvent, 256)
	nextRoot := time.Now().Add(rootCheckEvery)
	var ready []turn
	picked := map[*notifier]int{} // index in ready
	pick := func(n *notifier, woken bool) {
		if i, ok := picked[n]; ok {
			ready[i].woken = ready[i].woken || woken
			return
		}
		picked[n] = len(ready)
		ready = append(ready, turn{n, woken})
	}
	for {
		now := time.Now()
		l.mu.Lock()
		if len(l.members) == 0 {
			l.running = false
			unix.Close(epfd)
			unix.Close(wake)
			l.mu.Unlock()
			return
		}
		until := nextRoot
		for _, t := range l.due {
			if t.Before(until) {
				until = t
			}
		}
		l.mu.Unlock()
		ms := max(int(until.Sub(now)/time.Millisecond)+1, 0) // -1 would wait for ever
		got, err := unix.EpollWait(epfd, events, ms)
		if err != nil && err != unix.EINTR {
			time.Sleep(time.Millisecond) // epfd stays valid until this loop closes it: nothing else fails a wait, but never spin
		}
		now = time.Now()
		roots := !now.Before(nextRoot)
		l.mu.Lock()
		for _, ev := range events[:max(got, 0)] {
			if ev.Fd == int32(wake) {
				var b [8]byte
				unix.Read(wake, b[:])
				continue
			}
			if n := l.members[ev.Fd]; n != nil {
				_, nwake := n.in.Fds()
				pick(n, ev.Fd == int32(nwake))
			}
		}
		for n, t := range l.due {
			if !now.Before(t) {
				pick(n, false)
			}
		}
		if roots {
			for _, n := range l.members {
				pick(n, false) // each once: pick drops the second
			}
		}
		l.mu.Unlock()
		busy := false
		for _, tn := range ready {
			b, pairBy := tn.n.step(now, roots, tn.woken)
			busy = busy || b
			l.mu.Lock()
			if l.has(tn.n) && !pairBy.IsZero() {
				l.due[tn.n] = pairBy
			} else {
				delete(l.due, tn.n)
			}
			l.mu.Unlock()
		}
		clear(picked)
		clear(ready)
		ready = ready[:0]
		if roots {
			nextRoot = now.Add(rootCheckEvery)
		}
		if busy {
			gather()
		}
	}
}
