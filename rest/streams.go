package rest

import (
	"context"
	"sync"
)

// # Ending the live streams when the daemon stops
//
// The watch streams (the SSE of GET …/watch/{id}/events, the websocket of
// GET /fs/watch, the long-poll of …/poll and POST /v1/file/watch/wait) wait
// for events for as long as the client stays: to net/http they are requests
// in flight, and a graceful Shutdown would wait its whole timeout for them.
// EndStreams, called by the daemon before Shutdown, ends each of them at
// once with a last message where its transport has one:
//
//   - SSE: "event: shutdown" with data {"reason":"the daemon is stopping"};
//   - websocket: a close frame with status 1001 (going away) and that reason;
//   - long-poll: the batch it has (empty, with its cursor), as if its
//     timeout had passed;
//   - wait: its 503 timeout, the message saying "the daemon is stopping".
//
// A stream started after EndStreams ends the same way at once. A stream on
// a sandbox that Registry.Remove takes out ends the same way, its reason
// "the sandbox was removed" (removedReason, selector.go).

// shutdownReason is the last message's reason.
const shutdownReason = "the daemon is stopping"

// streamStop is the server's register of live streams.
type streamStop struct {
	mu      sync.Mutex
	stopped bool
	ch      chan struct{} // closed by EndStreams
	wg      sync.WaitGroup
}

// streamContext is the context a stream waits under: parent, also ended
// by EndStreams and by the removal of the request's sandbox. done must be
// called when the stream has sent its last message.
func (s *Server) streamContext(parent context.Context) (ctx context.Context, done func()) {
	st := &s.streams
	var gone chan struct{} // nil: a route on no sandbox
	if e := selection(parent); e != nil {
		gone = e.gone
	}
	ctx, cancel := context.WithCancel(parent)
	st.mu.Lock()
	stopped := st.stopped
	if !stopped {
		st.wg.Add(1)
	}
	st.mu.Unlock()
	go func() {
		select {
		case <-st.ch:
			cancel()
		case <-gone:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		if !stopped {
			st.wg.Done()
		}
	}
}

// endReason is why the streams of the request whose context is ctx end
// other than by its client: removedReason when its sandbox was removed,
// shutdownReason when EndStreams was called, "" when neither.
func (s *Server) endReason(ctx context.Context) string {
	if e := selection(ctx); e != nil && e.isGone() {
		return removedReason
	}
	if s.stopping() {
		return shutdownReason
	}
	return ""
}

// stopping reports whether EndStreams was called.
func (s *Server) stopping() bool {
	select {
	case <-s.streams.ch:
		return true
	default:
		return false
	}
}

// EndStreams ends every live stream, each with its last message, and
// waits until they have sent it or ctx ends. The server goes on answering
// other requests; call it once, before http.Server.Shutdown.
func (s *Server) EndStreams(ctx context.Context) {
	st := &s.streams
	st.mu.Lock()
	if !st.stopped {
		st.stopped = true
		close(st.ch)
	}
	st.mu.Unlock()
	ended := make(chan struct{})
	go func() { st.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
	}
}
