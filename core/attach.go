package core

import (
	"io"
	"sync"
)

// attachments are the state core's subpackages keep per Sandbox (package
// checkpoint's store): core holds them so that Close releases them with
// the sandbox, without knowing what they are.
type attachments struct {
	mu     sync.Mutex
	m      map[any]io.Closer
	closed bool
}

// Attachment is the value kept on s under key (a subpackage's own
// unexported type, so keys never collide), made by mk on the first call.
// mk must be cheap and open nothing: the value opens what it needs on
// first use. Close closes every attachment before the root fd goes; one
// first asked for after Close is closed before it is returned, so it
// opens nothing.
func (s *Sandbox) Attachment(key any, mk func() io.Closer) io.Closer {
	a := &s.att
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.m[key]; ok {
		return v
	}
	v := mk()
	if a.closed {
		v.Close()
	}
	if a.m == nil {
		a.m = map[any]io.Closer{}
	}
	a.m[key] = v
	return v
}

// closeAttachments closes every attachment (Close).
func (s *Sandbox) closeAttachments() {
	a := &s.att
	a.mu.Lock()
	a.closed = true
	vs := make([]io.Closer, 0, len(a.m))
	for _, v := range a.m {
		vs = append(vs, v)
	}
	a.mu.Unlock()
	for _, v := range vs {
		v.Close()
	}
}
