package replicate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/natsout"
)

// maxEntriesObject bounds the entries of a manifest sent as an object
// that a reader takes in (some 2.5 million entries); a variable so a test
// can lower it.
var maxEntriesObject uint64 = 512 << 20

// ObjectsBucket is the one Object Store bucket every host sends content to.
const ObjectsBucket = "sandfs-objects"

// ManifestVersion is Manifest.Version: a reader refuses one it does not
// know. Version 1 is a full manifest; version 2 adds Base and Removed (a
// delta), and its entries object holds Removed beside Entries.
const ManifestVersion = 2

// Manifest is one checkpoint as the fleet keeps it: what another host
// needs to rebuild the tree from the objects bucket.
type Manifest struct {
	Version    int        `json:"version"`
	Sandbox    string     `json:"sandbox"`
	Host       string     `json:"host"` // the host that sent it
	Checkpoint Checkpoint `json:"checkpoint"`
	// Entries are every path, sorted; when they would not fit a KV value
	// (the broker's max payload), they are an object of ObjectsBucket
	// instead, named EntriesObject (its SHA-256), sent before the manifest.
	Entries       []Entry `json:"entries,omitempty"`
	EntriesObject string  `json:"entriesObject,omitempty"`
	// Base, when set, makes the manifest a delta: the checkpoint id of an
	// earlier manifest of the same sandbox in the same KV, Entries then
	// only the paths added or changed since it and Removed (sorted) the
	// paths gone. ReadManifest answers the applied, full manifest.
	Base    string   `json:"base,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// Chain is, in a delta, the deltas between it and the full manifest
	// its chain starts from, as its sender counted them (1 for a delta
	// of a full one). A reader that takes the tree from its own store
	// (Local) learns the depth from it without reading the chain.
	Chain int `json:"chain,omitempty"`
	// Depth is how many deltas ReadManifest applied to answer it (not
	// sent): a sender basing deltas on it keeps the chain bounded.
	Depth int `json:"-"`
}

// body is a version 2 entries object: what the manifest does not hold
// inline when it would not fit a message.
type body struct {
	Entries []Entry  `json:"entries,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Checkpoint is the checkpoint's header.
type Checkpoint struct {
	ID           string    `json:"id"`
	Name         string    `json:"name,omitempty"`
	Reason       string    `json:"reason"`
	Seq          uint64    `json:"seq"`
	Created      time.Time `json:"created"`
	Files        int64     `json:"files"`
	Dirs         int64     `json:"dirs"`
	Symlinks     int64     `json:"symlinks"`
	Bytes        int64     `json:"bytes"`
	SkipExcluded bool      `json:"skipExcluded,omitempty"`
	// Identity is the sandbox's identity: a host that rebuilds the root
	// from this checkpoint marks it with it (core.MarkRoot).
	Identity string `json:"identity,omitempty"`
}

// Entry is one path of a checkpoint.
type Entry struct {
	Path   string    `json:"path"`
	Type   string    `json:"type"` // file, dir, symlink
	Mode   uint32    `json:"mode"` // permission bits with setuid, setgid, sticky (07777)
	Uid    uint32    `json:"uid"`
	Gid    uint32    `json:"gid"`
	Mtime  time.Time `json:"mtime"`
	Size   int64     `json:"size"`
	Target string    `json:"target,omitempty"` // symlink
	Hash   string    `json:"hash,omitempty"`   // file: hex SHA-256, its object's name
}

func header(cp checkpoint.Checkpoint) Checkpoint {
	return Checkpoint{ID: cp.ID, Name: cp.Name, Reason: cp.Reason, Seq: cp.Seq, Created: cp.Created,
		Files: cp.Files, Dirs: cp.Dirs, Symlinks: cp.Symlinks, Bytes: cp.Bytes, SkipExcluded: cp.SkipExcluded, Identity: cp.Identity}
}

// EntryOf is the manifest's form of a checkpoint's entry.
func EntryOf(e checkpoint.Entry) Entry {
	m := uint32(e.Mode.Perm())
	if e.Mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if e.Mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if e.Mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return Entry{Path: e.Path, Type: e.Type, Mode: m, Uid: e.Uid, Gid: e.Gid, Mtime: e.Mtime.UTC(),
		Size: e.Size, Target: e.Target, Hash: e.Hash}
}

// BucketOf is the KV bucket of the sandbox's manifests: sandfs-cp-NAME,
// the name as natsout.EncodeName writes it (KV allows [A-Za-z0-9_-]), so
// two names never share a bucket.
func BucketOf(sandbox string) string { return "sandfs-cp-" + natsout.EncodeName(sandbox) }

// ReadManifest reads the manifest of checkpoint id from kv, its entries
// from obs when they were sent as an object. A delta is answered applied
// to its base, read the same way: the full manifest, Base cleared.
func ReadManifest(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, id string) (Manifest, error) {
	return readManifest(ctx, kv, obs, id, nil, nil)
}

// Local answers the tree of a checkpoint the reader's own store holds
// (ok false when it holds none of that id), every path sorted: what it
// sent to the fleet, or imported from it, so the fleet's manifest of
// that id names the same tree. A reader given one (ReadManifestLocal)
// reads such a manifest's header alone from the KV: its entries object,
// or the chain of deltas to its full base (a 100,000-file tree's entries
// are some 19 MB of JSON), are not read.
type Local func(id string) (entries []Entry, ok bool)

// ReadManifestLocal is ReadManifest, each manifest of the chain whose
// checkpoint local holds taken from there.
func ReadManifestLocal(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, id string, local Local) (Manifest, error) {
	return readManifest(ctx, kv, obs, id, nil, local)
}

// StoreOf is the Local of the sandbox sb's checkpoint store.
func StoreOf(sb *core.Sandbox) Local {
	return func(id string) ([]Entry, bool) {
		entries, err := checkpoint.Entries(sb, id)
		if err != nil {
			return nil, false
		}
		out := make([]Entry, len(entries))
		for i, e := range entries {
			out[i] = EntryOf(e)
		}
		return out, true
	}
}

// readManifest is ReadManifest below the deltas of chain, whose bases
// led to id.
func readManifest(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, id string, chain []string, local Local) (Manifest, error) {
	m, err := readHead(ctx, kv, id)
	if err != nil {
		return m, err
	}
	if local != nil {
		if entries, ok := local(id); ok {
			if m.Base != "" {
				m.Depth = min(max(m.Chain, 1), maxReadChain)
			}
			m.Entries, m.EntriesObject, m.Base, m.Removed = entries, "", "", nil
			return m, nil
		}
	}
	if err := readBody(ctx, obs, id, &m); err != nil || m.Base == "" {
		return m, err
	}
	chain = append(chain, id)
	switch {
	case len(chain) > maxReadChain:
		return m, fmt.Errorf("manifest %s: a chain of more than %d deltas: refused", chain[0], maxReadChain)
	case slices.Contains(chain, m.Base):
		return m, fmt.Errorf("manifest %s: its base %s is a delta of it (a cycle): refused", id, m.Base)
	case !checkpoint.ValidID(m.Base):
		return m, fmt.Errorf("manifest %s: base %q: not a checkpoint id: refused", id, m.Base)
	}
	base, err := readManifest(ctx, kv, obs, m.Base, chain, local)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// Not the caller's "no such checkpoint": id is there, broken.
		return m, fmt.Errorf("manifest %s: its base %s is not in the KV: refused", id, m.Base)
	} else if err != nil {
		return m, err
	}
	if base.Sandbox != m.Sandbox || base.Checkpoint.ID != m.Base {
		return m, fmt.Errorf("manifest %s: its base %s names checkpoint %q of sandbox %q: refused", id, m.Base, base.Checkpoint.ID, base.Sandbox)
	}
	if m.Entries, err = apply(base.Entries, m.Entries, m.Removed); err != nil {
		return m, fmt.Errorf("manifest %s, a delta of %s: %w: refused", id, m.Base, err)
	}
	m.Base, m.Removed, m.Depth = "", nil, base.Depth+1
	return m, nil
}

// readOne reads the manifest of key id as it is stored: a delta unapplied.
func readOne(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, id string) (Manifest, error) {
	m, err := readHead(ctx, kv, id)
	if err == nil {
		err = readBody(ctx, obs, id, &m)
	}
	return m, err
}

// readHead reads the KV's value of key id: the manifest, its entries
// only when they are inline.
func readHead(ctx context.Context, kv jetstream.KeyValue, id string) (Manifest, error) {
	var m Manifest
	e, err := kv.Get(ctx, id)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return m, fmt.Errorf("manifest %s: %w", id, err)
	}
	if !knownVersion(m.Version) {
		return m, fmt.Errorf("manifest %s: version %d, this host reads 1 to %d", id, m.Version, ManifestVersion)
	}
	if m.Version == 1 && (m.Base != "" || m.Removed != nil) {
		return m, fmt.Errorf("manifest %s: version 1 names a base or removals: refused", id)
	}
	return m, nil
}

// readBody reads into m, read by readHead, the entries it holds as an
// object, and checks its shape.
func readBody(ctx context.Context, obs jetstream.ObjectStore, id string, m *Manifest) error {
	if m.EntriesObject == "" {
		return checkShape(id, *m)
	}
	if obs == nil {
		return errors.New("manifest " + id + ": its entries are an object, and no objects bucket was given")
	}
	if m.Entries != nil || m.Removed != nil {
		return fmt.Errorf("manifest %s: entries both inline and an object: refused", id)
	}
	b, err := getEntries(ctx, obs, id, m.EntriesObject)
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m.EntriesObject {
		return fmt.Errorf("manifest %s: its entries do not hash to their name: refused", id)
	}
	if m.Version == 1 {
		err = json.Unmarshal(b, &m.Entries)
	} else {
		var bd body
		err = json.Unmarshal(b, &bd)
		m.Entries, m.Removed = bd.Entries, bd.Removed
	}
	if err != nil {
		return fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	return checkShape(id, *m)
}

// getEntries reads the entries object name of manifest id. It is read
// into one buffer of the size its info gives (a growing buffer of a
// 100,000-entry tree's tens of MiB zeroes and copies several times that
// on the path of a take-up), and refused when it says more than
// maxEntriesObject or its chunks bring more or less than it says.
func getEntries(ctx context.Context, obs jetstream.ObjectStore, id, name string) ([]byte, error) {
	r, err := obs.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	defer r.Close()
	info, err := r.Info()
	if err != nil {
		return nil, fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	if info.Size > maxEntriesObject {
		return nil, fmt.Errorf("manifest %s: its entries are %d bytes, more than %d: refused", id, info.Size, maxEntriesObject)
	}
	b := make([]byte, info.Size+1) // one byte more: a longer object is seen
	n, err := io.ReadFull(r, b)
	if err == io.EOF || err == io.ErrUnexpectedEOF { // shorter than the buffer, as it should be
		err = nil
	}
	if err == nil && uint64(n) != info.Size {
		err = fmt.Errorf("%d bytes, its info says %d: refused", n, info.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	return b[:n], nil
}

func knownVersion(v int) bool { return v >= 1 && v <= ManifestVersion }

// checkShape refuses removals in a manifest that is not a delta.
func checkShape(id string, m Manifest) error {
	if m.Base == "" && m.Removed != nil {
		return fmt.Errorf("manifest %s: removals and no base: refused", id)
	}
	return nil
}
