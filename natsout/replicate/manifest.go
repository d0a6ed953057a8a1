package replicate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core/checkpoint"
	"sandfs/natsout"
)

// maxEntriesObject bounds the entries of a manifest sent as an object
// that a reader takes in (some 2.5 million entries).
const maxEntriesObject = 512 << 20

// ObjectsBucket is the one Object Store bucket every host sends content to.
const ObjectsBucket = "sandfs-objects"

// ManifestVersion is Manifest.Version: a reader refuses one it does not know.
const ManifestVersion = 1

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
		Files: cp.Files, Dirs: cp.Dirs, Symlinks: cp.Symlinks, Bytes: cp.Bytes, SkipExcluded: cp.SkipExcluded}
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
// from obs when they were sent as an object.
func ReadManifest(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, id string) (Manifest, error) {
	var m Manifest
	e, err := kv.Get(ctx, id)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return m, fmt.Errorf("manifest %s: %w", id, err)
	}
	if m.Version != ManifestVersion {
		return m, fmt.Errorf("manifest %s: version %d, want %d", id, m.Version, ManifestVersion)
	}
	if m.EntriesObject == "" {
		return m, nil
	}
	if obs == nil {
		return m, errors.New("manifest " + id + ": its entries are an object, and no objects bucket was given")
	}
	info, err := obs.GetInfo(ctx, m.EntriesObject)
	if err != nil {
		return m, fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	if info.Size > maxEntriesObject {
		return m, fmt.Errorf("manifest %s: its entries are %d bytes, more than %d: refused", id, info.Size, maxEntriesObject)
	}
	b, err := obs.GetBytes(ctx, m.EntriesObject)
	if err != nil {
		return m, fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	if sum := sha256.Sum256(b); len(b) > maxEntriesObject || hex.EncodeToString(sum[:]) != m.EntriesObject {
		return m, fmt.Errorf("manifest %s: its entries do not hash to their name: refused", id)
	}
	if err := json.Unmarshal(b, &m.Entries); err != nil {
		return m, fmt.Errorf("manifest %s: its entries: %w", id, err)
	}
	return m, nil
}
