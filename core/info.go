package core

import (
	"io/fs"
	"sandfs/core/apipath"
	"time"

	"golang.org/x/sys/unix"
)

// Info describes one file. It has no wire tags: each route family converts
// it to its own shape.
type Info struct {
	Name    string // last component; "/" for the root
	Path    string // API path
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
	Ctime   time.Time // last status change
	Inode   uint64
	Nlink   uint64
	Uid     uint32
	Gid     uint32
}

// IsDir reports whether the file is a directory.
func (i Info) IsDir() bool { return i.Mode.IsDir() }

// IsRegular reports whether the file is a regular file.
func (i Info) IsRegular() bool { return i.Mode.IsRegular() }

// IsSymlink reports whether the file is a symlink (only from an lstat).
func (i Info) IsSymlink() bool { return i.Mode&fs.ModeSymlink != 0 }

func InfoFrom(apiPath string, st *unix.Stat_t) Info {
	_, name := apipath.Split(apiPath)
	if name == "" {
		name = "/"
	}
	return Info{
		Name:    name,
		Path:    apiPath,
		Mode:    FileMode(st.Mode),
		Size:    st.Size,
		ModTime: time.Unix(st.Mtim.Unix()),
		Ctime:   time.Unix(st.Ctim.Unix()),
		Inode:   st.Ino,
		Nlink:   uint64(st.Nlink),
		Uid:     st.Uid,
		Gid:     st.Gid,
	}
}

// FileMode converts a stat(2) mode to an fs.FileMode as the os package does.
func FileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
