package httpkit

import (
	"errors"
	"io"
	"net/http"
)

// bodyReader remembers the first error reading the request body, so a
// failure of the client (short body, closed connection, over a limit) is
// told from a failure of the disk whatever core made of it.
type BodyReader struct {
	R   io.Reader
	err error
}

func (b *BodyReader) Read(p []byte) (int, error) {
	n, err := b.R.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// blame returns the body's own error when reading the body failed, else err.
func (b *BodyReader) Blame(err error) error {
	if b.err == nil {
		return err
	}
	var mbe *http.MaxBytesError
	if errors.As(b.err, &mbe) {
		return b.err
	}
	return &BodyError{Err: b.err}
}
