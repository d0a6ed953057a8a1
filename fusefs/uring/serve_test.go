package uring

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// fakeHandler records what the transport hands it and answers with a
// fixed reply (out header, then body).
type fakeHandler struct {
	in     [][]byte
	outLen []int
	body   []byte
	st     fuse.Status
}

func (f *fakeHandler) HandleRequest(in, out [][]byte) (int, fuse.Status) {
	f.in = nil
	for _, b := range in {
		f.in = append(f.in, append([]byte(nil), b...))
	}
	f.outLen = nil
	for _, b := range out {
		f.outLen = append(f.outLen, len(b))
	}
	if !f.st.Ok() {
		return 0, f.st
	}
	unique := binary.LittleEndian.Uint64(in[0][8:])
	binary.LittleEndian.PutUint32(out[0][0:], uint32(outHeaderSize+len(f.body)))
	binary.LittleEndian.PutUint64(out[0][8:], unique)
	copy(out[1], f.body)
	return outHeaderSize + len(f.body), fuse.OK
}

// request fills e as the kernel does: the in header in in_out, the
// opcode's header in op_in, the rest in the payload, its size in
// ent_in_out.payload_sz, the in header's length counting them all.
func request(e *entry, opcode uint32, unique uint64, opIn, payload []byte) {
	binary.LittleEndian.PutUint32(e.hdr[0:], uint32(inHeaderSize+len(opIn)+len(payload)))
	binary.LittleEndian.PutUint32(e.hdr[4:], opcode)
	binary.LittleEndian.PutUint64(e.hdr[8:], unique)
	copy(e.hdr[hdrOpIn:], opIn)
	copy(e.payload, payload)
	binary.LittleEndian.PutUint32(e.hdr[hdrEntInOut+16:], uint32(len(payload)))
}

func newTestEntry(t *testing.T) *entry {
	ents, mem, err := newEntries(1, 8192)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return ents[0]
}

// A request is rebuilt as /dev/fuse gives it: in header, the opcode's
// header (its size from the in header's length), the payload; the reply's
// header goes back in in_out, its body in the payload, the body's size in
// payload_sz.
func TestHandleLayout(t *testing.T) {
	e := newTestEntry(t)
	h := &fakeHandler{body: []byte("entry-out-body"), st: fuse.OK}
	tr := &Transport{cfg: Config{Handler: h}}
	opIn := bytes.Repeat([]byte{7}, 16)
	request(e, 1 /* LOOKUP */, 42, opIn, []byte("name\x00"))
	tr.handle(e)
	if len(h.in) != 3 || len(h.in[0]) != inHeaderSize || !bytes.Equal(h.in[1], opIn) || string(h.in[2]) != "name\x00" {
		t.Fatalf("handler got in %d iovecs: %q", len(h.in), h.in)
	}
	if len(h.outLen) != 2 || h.outLen[0] != outHeaderSize || h.outLen[1] != len(e.payload) {
		t.Fatalf("handler got out iovecs of %v", h.outLen)
	}
	if n := binary.LittleEndian.Uint32(e.hdr[0:]); n != outHeaderSize+14 {
		t.Errorf("out header length %d", n)
	}
	if u := binary.LittleEndian.Uint64(e.hdr[8:]); u != 42 {
		t.Errorf("out header unique %d, want 42", u)
	}
	if sz := binary.LittleEndian.Uint32(e.hdr[hdrEntInOut+16:]); sz != 14 || string(e.payload[:sz]) != "entry-out-body" {
		t.Errorf("payload_sz %d, payload %q", sz, e.payload[:14])
	}
}

// A name read from the payload is kept apart (the reply is written over
// the payload); a WRITE's data is read in place.
func TestHandlePayloadInPlace(t *testing.T) {
	e := newTestEntry(t)
	var gotIn []byte
	tr := &Transport{cfg: Config{Handler: handlerFunc(func(in, out [][]byte) (int, fuse.Status) {
		gotIn = in[len(in)-1]
		binary.LittleEndian.PutUint32(out[0], outHeaderSize)
		return outHeaderSize, fuse.OK
	})}}
	payloadAt := unsafe.Pointer(&e.payload[0])
	request(e, opWrite, 1, make([]byte, 40), []byte("data"))
	tr.handle(e)
	if unsafe.Pointer(&gotIn[0]) != payloadAt {
		t.Errorf("a WRITE's data was copied")
	}
	request(e, 1, 2, nil, []byte("name\x00"))
	tr.handle(e)
	if unsafe.Pointer(&gotIn[0]) == payloadAt {
		t.Errorf("a LOOKUP's name was left in the payload the reply is written to")
	}
}

// A request the handler cannot serve still gets a reply, with the error
// and the request's unique, so the entry comes back.
func TestHandleError(t *testing.T) {
	e := newTestEntry(t)
	tr := &Transport{cfg: Config{Handler: &fakeHandler{st: fuse.EIO}}}
	request(e, 1, 99, make([]byte, 8), nil)
	tr.handle(e)
	if n, st, u := binary.LittleEndian.Uint32(e.hdr[0:]), int32(binary.LittleEndian.Uint32(e.hdr[4:])), binary.LittleEndian.Uint64(e.hdr[8:]); n != outHeaderSize || st != -int32(fuse.EIO) || u != 99 {
		t.Errorf("out header: len %d error %d unique %d", n, st, u)
	}
	if sz := binary.LittleEndian.Uint32(e.hdr[hdrEntInOut+16:]); sz != 0 {
		t.Errorf("payload_sz %d after an error", sz)
	}
}

type handlerFunc func(in, out [][]byte) (int, fuse.Status)

func (f handlerFunc) HandleRequest(in, out [][]byte) (int, fuse.Status) { return f(in, out) }

// The iovecs handed to REGISTER point at the entry's own buffers.
func TestEntryIovecs(t *testing.T) {
	e := newTestEntry(t)
	base := binary.LittleEndian.Uint64(e.iov[0:])
	if uintptr(base) != uintptr(unsafe.Pointer(&e.hdr[0])) || binary.LittleEndian.Uint64(e.iov[8:]) != hdrSize {
		t.Errorf("iov[0] does not describe the header")
	}
	if uintptr(binary.LittleEndian.Uint64(e.iov[16:])) != uintptr(unsafe.Pointer(&e.payload[0])) || binary.LittleEndian.Uint64(e.iov[24:]) != uint64(len(e.payload)) || len(e.payload) < 8192 {
		t.Errorf("iov[1] does not describe the payload")
	}
}
