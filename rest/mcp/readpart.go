package mcp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strings"

	"sandfs/core"
)

// openFile opens the regular file at p in the request's sandbox for
// reading, with what the open found it to be; its errors are the tools'.
func (f *Family) openFile(ctx context.Context, p string) (*os.File, core.Info, error) {
	sb, err := f.sandbox(ctx)
	if err != nil {
		return nil, core.Info{}, err
	}
	fh, info, err := sb.OpenFile(ctx, p)
	if err != nil {
		return nil, info, openErr(err)
	}
	return fh, info, nil
}

// head and tail of read_text_file read only the part of the file they
// answer, as the reference does, so a log of any size can be read from
// either end; what they read is still bounded by maxReadBytes.

// readHead is the first n lines of the file at p: its first n lines
// joined by "\n", the last without its newline; a last line without one
// counts.
func (f *Family) readHead(ctx context.Context, p string, n int) (string, error) {
	fh, info, err := f.openFile(ctx, p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	r := bufio.NewReader(io.LimitReader(fh, maxReadBytes+1))
	var lines []string
	read := 0
	for len(lines) < n {
		line, err := r.ReadString('\n')
		read += len(line)
		if read > maxReadBytes {
			return "", errorf("the first %d lines of %s are over %d bytes", n, info.Path, maxReadBytes)
		}
		if line != "" && (strings.HasSuffix(line, "\n") || err == io.EOF) {
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", toolErr(err, "read")
		}
	}
	return toText([]byte(strings.Join(lines, "\n"))), nil
}

// readTail is the last n lines of the file at p as the reference takes
// them: the end of the file, CRLF read as LF, split at "\n", its last n
// pieces joined (so a file ending in a newline answers n-1 lines and "").
func (f *Family) readTail(ctx context.Context, p string, n int) (string, error) {
	fh, info, err := f.openFile(ctx, p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	const chunk = 64 << 10
	var buf []byte // the end of the file read so far
	pos, newlines := info.Size, 0
	for pos > 0 && newlines < n {
		size := min(int64(chunk), pos)
		if int64(len(buf))+size > maxReadBytes {
			return "", errorf("the last %d lines of %s are over %d bytes", n, info.Path, maxReadBytes)
		}
		pos -= size
		part := make([]byte, size)
		if _, err := fh.ReadAt(part, pos); err != nil && err != io.EOF {
			return "", toolErr(err, "read")
		}
		newlines += bytes.Count(part, []byte{'\n'})
		buf = append(part, buf...)
	}
	pieces := strings.Split(normalizeEOL(toText(buf)), "\n")
	return strings.Join(pieces[max(0, len(pieces)-n):], "\n"), nil
}

// openErr is a failed open of a file to read, as Node words it.
func openErr(err error) error {
	if errnoOf(err) == errEISDIR {
		// Node's read of a directory names no path.
		return errorf("EISDIR: illegal operation on a directory, read")
	}
	return toolErr(err, "open")
}

// readRange is the bytes [offset, offset+length) of the file at p, read
// with one ReadAt, so a part of a file of any size costs only that part;
// length 0 is the rest of the file up to maxReadBytes. next is the offset
// after the part, size the file's size: a reader pages on with them.
func (f *Family) readRange(ctx context.Context, p string, offset, length int64) (s string, next, size int64, err error) {
	fh, info, err := f.openFile(ctx, p)
	if err != nil {
		return "", 0, 0, err
	}
	defer fh.Close()
	if length == 0 {
		length = maxReadBytes
	}
	length = max(0, min(length, info.Size-offset))
	buf := make([]byte, length)
	n, err := fh.ReadAt(buf, offset)
	if err != nil && err != io.EOF {
		return "", 0, 0, toolErr(err, "read")
	}
	// A part cut inside a UTF-8 sequence answers U+FFFD for its pieces,
	// as any invalid byte.
	return toText(buf[:n]), offset + int64(n), info.Size, nil
}
