package aio

import "testing"

func TestAIOUndoHistoryBounded(t *testing.T) {
	u := newUndoHistory(2, 10)
	u.mu.Lock()
	u.push("/a", undoStep{content: "1111", existed: true})
	u.push("/a", undoStep{content: "22", existed: true})
	u.push("/a", undoStep{content: "33", existed: true}) // over 2 a file: "1111" goes
	u.push("/b", undoStep{content: "4444", existed: true})
	u.push("/b", undoStep{content: "55", existed: true}) // total 10: fits
	u.push("/c", undoStep{content: "6", existed: true})  // total 11: /a, least recent, loses "22"
	u.push("/d", undoStep{content: "01234567890", existed: true})
	u.mu.Unlock()
	for p, want := range map[string]int{"/a": 1, "/b": 2, "/c": 1, "/d": 0} {
		if got := u.depth(p); got != want {
			t.Errorf("%s: %d steps, want %d", p, got, want)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if st, _ := u.pop("/a"); st.content != "33" {
		t.Errorf("/a pop: got %q, want 33", st.content)
	}
	if u.total != 7 {
		t.Errorf("total: got %d, want 7", u.total)
	}
}
