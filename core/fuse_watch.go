package core

// Watching reports whether the kernel watch of the root runs (a
// StartWatching whose context has not ended). The FUSE mirror needs the
// watch to hear of outside changes; it starts one only when nobody has.
func (s *Sandbox) Watching() bool {
	s.ledger.mu.Lock()
	defer s.ledger.mu.Unlock()
	return s.ledger.ctlDir != ""
}
