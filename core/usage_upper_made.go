package core

import (
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core/quota"
)

// upperMade is what a fork knows of the files its upper made, by their
// inode numbers in the merged view, so that writing one again needs no
// look at the upper (upperCount's open, stat and close, the most of what
// a fork's replace costs beyond a plain sandbox's).
//
// A number it holds is a file made in the upper, for as long as the
// merged view shows a file of that number: a file made in the upper keeps
// the upper's inode number in the merged view, and a lower file (and one
// copied up from it) shows the lower's. The lower is the fork's
// checkpoint's made tree, immutable and alive as long as the fork, so no
// lower file ever has a number an upper file had; a number freed and
// taken again on the state's filesystem is taken by another upper file,
// still made in the upper. So the number may outlive its file and stay
// true.
//
// It learns a number where it sees one: a file the daemon wrote by
// replace, and one upperCount found made in the upper. It is bounded: at
// upperMadeMax numbers it forgets them all and learns again.
type upperMade struct {
	mu   sync.Mutex
	inos map[uint64]struct{}
}

const upperMadeMax = 1 << 14

func (m *upperMade) add(ino uint64) { m.replace(0, ino) }

// replace learns ino and forgets old (0: none), the number of the file it
// replaced: a file written again and again by replace takes one place,
// not one a write.
func (m *upperMade) replace(old, ino uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inos, old)
	if m.inos == nil || len(m.inos) >= upperMadeMax {
		m.inos = make(map[uint64]struct{})
	}
	m.inos[ino] = struct{}{}
}

// count is upperCount's answer for a regular file of merged stat st that
// the upper is known to have made: its size and entry, exactly, as the
// upper holds it (a file of one link: one of several frees no bytes,
// which upperCount tells apart).
func (m *upperMade) count(st *unix.Stat_t) (quota.Count, bool) {
	if st == nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return quota.Count{}, false
	}
	m.mu.Lock()
	_, ok := m.inos[st.Ino]
	m.mu.Unlock()
	return quota.Count{Entries: 1, Bytes: st.Size}, ok
}
