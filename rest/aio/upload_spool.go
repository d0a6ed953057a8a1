package aio

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/rest/httpkit"
)

// A file part that comes before the form's path cannot stream to its
// target: where it goes is not known yet. It is spooled into an unnamed
// file (O_TMPFILE) in the daemon's temp directory, which the kernel drops
// when it is closed, a crash included: nothing to sweep, and nothing in a
// sandbox's tree. Its size is bounded as a tar body is (--max-tar-body);
// the upload then reads it back and is held to the sandbox's quota as any
// other.

type spool struct{ f *os.File }

// spoolPart copies r into a new spool of at most limit bytes.
func spoolPart(r io.Reader, limit int64) (*spool, error) {
	fd, err := unix.Open(os.TempDir(), unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spooling the upload: %w", err)
	}
	sp := &spool{f: os.NewFile(uintptr(fd), "upload spool")}
	body := &httpkit.BodyReader{R: r}
	n, err := io.Copy(sp.f, io.LimitReader(body, limit+1))
	switch {
	case err != nil:
		sp.close()
		return nil, body.Blame(err) // a body cut short is the client's; a full disk the daemon's (507)
	case n > limit:
		sp.close()
		return nil, httpkit.TooLarge("an upload whose file part comes before its path is spooled, and is larger than the limit of %d bytes", limit)
	}
	if _, err := sp.f.Seek(0, io.SeekStart); err != nil {
		sp.close()
		return nil, err
	}
	return sp, nil
}

func (sp *spool) Read(p []byte) (int, error) { return sp.f.Read(p) }

func (sp *spool) close() { sp.f.Close() }
