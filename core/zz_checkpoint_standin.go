package core

// A stand-in for the checkpoint API another part of issue 19 builds, so that
// changes-since compiles before it is merged. The lead deletes this file at
// merge; nothing here is the real behaviour.

import (
	"errors"
	"io"
	"io/fs"
	"time"
)

// Checkpoint is one recorded state of the tree (stand-in).
type Checkpoint struct {
	ID, Name, Reason                       string
	Seq                                    uint64
	Created                                time.Time
	Files, Dirs, Symlinks, Bytes, NewBytes int64
}

// CheckpointEntry is one path of a checkpoint (stand-in).
type CheckpointEntry struct {
	Path     string
	Type     string
	Mode     fs.FileMode
	Uid, Gid uint32
	Mtime    time.Time
	Size     int64
	Target   string
	Hash     string
}

// ErrUnknownCheckpoint: no checkpoint has the id asked for.
var ErrUnknownCheckpoint = errors.New("unknown checkpoint")

// CheckpointByID (stand-in): none is known.
func (s *Sandbox) CheckpointByID(id string) (Checkpoint, error) {
	return Checkpoint{}, ErrUnknownCheckpoint
}

// Checkpoints (stand-in): none.
func (s *Sandbox) Checkpoints() ([]Checkpoint, error) { return nil, nil }

// OpenCheckpointFile (stand-in): nothing is kept.
func (s *Sandbox) OpenCheckpointFile(id, apiPath string) (io.ReadCloser, CheckpointEntry, error) {
	return nil, CheckpointEntry{}, fs.ErrNotExist
}
