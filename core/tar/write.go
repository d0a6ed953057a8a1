package tar

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"sort"

	"sandfs/core"
	"sandfs/internal/xdev"

	"golang.org/x/sys/unix"
)

// OpTar names tree-archive failures, OpUntar extraction's.
const (
	OpTar   = "tar"
	OpUntar = "untar"
)

// Write writes the directory at p (following a final symlink within the
// root) to w as an uncompressed tar stream, streamed as it walks: entries are
// named relative to p ("a/b.txt", directories with a trailing "/"), in
// sorted order, each directory before its contents. The walk holds
// directory fds and opens each name relative to its parent with O_NOFOLLOW,
// so it never leaves the root: symlinks are archived as symlinks (their
// target as written), never followed. Sockets, FIFOs and devices are left
// out. A file whose size changes while it is read is cut or zero-padded to
// the size its header announced. Errors before the first byte are
// *fs.PathError; after it, the stream is left short.
func Write(ctx context.Context, s *core.Sandbox, p string, w io.Writer) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	fd, err := s.Root().OpenBeneath(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return core.PathErr(OpTar, ap, err)
	}
	tw := tar.NewWriter(w)
	t := tarWalk{ctx: ctx, tw: tw, buf: make([]byte, 256<<10)}
	err = t.dir(fd, "")
	unix.Close(fd)
	if err != nil {
		return core.PathErr(OpTar, ap, err)
	}
	return tw.Close()
}

type tarWalk struct {
	ctx context.Context
	tw  *tar.Writer
	buf []byte
}

func (t *tarWalk) dir(fd int, prefix string) error {
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), prefix)
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		if err := t.entry(fd, name, prefix+name); err != nil {
			return err
		}
	}
	return nil
}

func (t *tarWalk) entry(dirfd int, name, rel string) error {
	var st unix.Stat_t
	mount, err := xdev.LstatAt(dirfd, name, &st)
	if err != nil {
		if err == unix.ENOENT {
			return nil // removed while we walked
		}
		return err
	}
	info := core.InfoFrom("/"+rel, &st)
	hdr := &tar.Header{
		Name:    rel,
		Mode:    int64(st.Mode & 0o7777),
		ModTime: info.ModTime,
		Uid:     int(st.Uid),
		Gid:     int(st.Gid),
		Format:  tar.FormatPAX,
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
		if mount {
			return t.tw.WriteHeader(hdr) // another mount: not entered (internal/xdev)
		}
		sub, err := xdev.OpenSubdir(dirfd, name)
		if err != nil {
			if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EXDEV {
				return nil // swapped, removed or mounted on meanwhile
			}
			return err
		}
		defer unix.Close(sub)
		if err := t.tw.WriteHeader(hdr); err != nil {
			return err
		}
		return t.dir(sub, rel+"/")
	case unix.S_IFLNK:
		target, err := core.Readlinkat(dirfd, name)
		if err != nil {
			return nil
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		return t.tw.WriteHeader(hdr)
	case unix.S_IFREG:
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ENOENT || err == unix.ELOOP {
				return nil
			}
			return err
		}
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size
		if err := t.tw.WriteHeader(hdr); err != nil {
			return err
		}
		n, err := io.CopyBuffer(t.tw, io.LimitReader(f, st.Size), t.buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		for n < st.Size { // the file shrank: pad to the announced size
			k := min(int64(len(t.buf)), st.Size-n)
			clear(t.buf[:k])
			m, err := t.tw.Write(t.buf[:k])
			n += int64(m)
			if err != nil {
				return err
			}
		}
		return nil
	}
	return nil // socket, FIFO, device: not archived
}
