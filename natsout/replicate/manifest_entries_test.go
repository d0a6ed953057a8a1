package replicate

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/natsout/natstest"
)

// TestGetEntries: a manifest's entries object is read whole into a
// buffer of the size its info gives, whatever its chunks, and refused
// past the bound or when the bucket lacks it.
func TestGetEntries(t *testing.T) {
	b := natstest.Start(t)
	js := b.JetStream(t)
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "entries-test"})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16+7) // several chunks, not a whole number of them
	for _, c := range []struct {
		name string
		data []byte
	}{{"empty", nil}, {"one", []byte("[")}, {"chunks", big}} {
		if _, err := obs.PutBytes(ctx, c.name, c.data); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, object string
		bound        uint64
		want         []byte
		err          string
	}{
		{"empty", "empty", 512 << 20, []byte{}, ""},
		{"one byte", "one", 512 << 20, []byte("["), ""},
		{"several chunks", "chunks", 512 << 20, big, ""},
		{"at the bound", "chunks", uint64(len(big)), big, ""},
		{"past the bound", "chunks", uint64(len(big)) - 1, nil, "more than"},
		{"missing", "nothing", 512 << 20, nil, "not found"},
	}
	defer func(b uint64) { maxEntriesObject = b }(maxEntriesObject)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			maxEntriesObject = c.bound
			got, err := getEntries(ctx, obs, "cp_test", c.object)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %d bytes, error %v; want an error saying %q", len(got), err, c.err)
				}
				if c.object == "nothing" && !errors.Is(err, jetstream.ErrObjectNotFound) {
					t.Fatalf("error %v: not ErrObjectNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, c.want) {
				t.Fatalf("got %d bytes, want %d, not the same", len(got), len(c.want))
			}
		})
	}
}
