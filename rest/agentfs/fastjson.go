package agentfs

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// The hot answers (GET /v1/fs/stat; the requests/s figure of make bench)
// are encoded by appending into a pooled buffer instead of through
// encoding/json's reflection, byte for byte what json.Marshal writes (the
// tests compare the two). Strings needing any escape fall back to
// json.Marshal.

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Content-Type values shared by every answer: net/http never changes a
// header value slice, so one can serve all.
var ctOctet = []string{"application/octet-stream"}

// appendJSONString appends s as json.Marshal would write it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendChronoRFC3339 appends chronoRFC3339(t).
func appendChronoRFC3339(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	t = t.UTC()
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	ns := t.Nanosecond()
	digits := 0
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		ns, digits = ns/1_000_000, 3
	case ns%1_000 == 0:
		ns, digits = ns/1_000, 6
	default:
		digits = 9
	}
	if digits > 0 {
		b = append(b, '.')
		var d [9]byte
		for i := digits - 1; i >= 0; i-- {
			d[i] = byte('0' + ns%10)
			ns /= 10
		}
		b = append(b, d[:digits]...)
	}
	return append(b, "+00:00"...)
}

// writeStat answers agentStat(in); modified and etag are appended
// straight from in.
func writeStat(w http.ResponseWriter, in core.Info) {
	bp := bufPool.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"path":`...)
	b = appendJSONString(b, in.Path)
	b = append(b, `,"entryType":`...)
	b = appendJSONString(b, agentEntryType(in))
	b = append(b, `,"size":`...)
	b = strconv.AppendUint(b, uint64(max(in.Size, 0)), 10)
	if !in.ModTime.IsZero() {
		b = append(b, `,"modified":"`...)
		b = appendChronoRFC3339(b, in.ModTime)
		b = append(b, '"')
	}
	// core.ETag(in), its quotes escaped as json.Marshal escapes them.
	b = append(b, `,"etag":"\"`...)
	b = strconv.AppendUint(b, in.Inode, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, in.Size, 16)
	b = append(b, '-')
	b = strconv.AppendInt(b, in.ModTime.UnixNano(), 16)
	b = append(b, `\""}`...)
	b = append(b, '\n')
	w.Header()["Content-Type"] = httpkit.JSONContentType
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	*bp = b
	bufPool.Put(bp)
}

// pathQuery is httpkit.Query(r) then httpkit.RequiredQuery(path) for the common request whose
// query is path=VALUE alone: that one is decoded without building a map.
// Anything else takes the general path, with its errors.
func pathQuery(r *http.Request) (string, error) {
	raw := r.URL.RawQuery
	if v, ok := strings.CutPrefix(raw, "path="); ok && !strings.ContainsAny(v, "&;") {
		if p, err := url.QueryUnescape(v); err == nil && utf8.ValidString(p) {
			return p, nil
		}
	}
	q, err := httpkit.Query(r)
	if err != nil {
		return "", err
	}
	return httpkit.RequiredQuery(q, "path", httpkit.PlainDialect)
}

// smallFile is the largest file GET /v1/fs/file answers from one pread
// into a pooled buffer rather than through http.ServeContent (whose
// seeks, precondition checks and separate header write and sendfile
// cost more than the bytes for a small file).
const smallFile = 64 << 10

var smallPool = sync.Pool{New: func() any { b := make([]byte, smallFile); return &b }}

// conditionalHeaders are the request headers http.ServeContent acts on;
// a request with any of them takes ServeContent.
var conditionalHeaders = []string{"Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"}

// serveSmall answers a whole-file GET of f (size bytes, modified at mod)
// with the headers http.ServeContent would send, when the file is small
// and the request unconditional. It reports whether it answered; false
// leaves w untouched.
func serveSmall(w http.ResponseWriter, r *http.Request, f interface {
	ReadAt([]byte, int64) (int, error)
}, size int64, mod time.Time) bool {
	if size > smallFile || r.Method != http.MethodGet {
		return false
	}
	for _, h := range conditionalHeaders {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	bp := smallPool.Get().(*[]byte)
	defer smallPool.Put(bp)
	b := (*bp)[:size]
	// One byte more than the size: a file grown since its fstat is left to
	// ServeContent, which sends what it finds.
	n, err := f.ReadAt((*bp)[:min(size+1, smallFile)], 0)
	if int64(n) != size || (err != nil && !errors.Is(err, io.EOF)) {
		return false
	}
	hdr := w.Header()
	if !mod.IsZero() && !mod.Equal(time.Unix(0, 0)) {
		hdr["Last-Modified"] = []string{mod.UTC().Format(http.TimeFormat)}
	}
	hdr["Accept-Ranges"] = acceptBytes
	hdr["Content-Length"] = []string{strconv.FormatInt(size, 10)}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true
}

var acceptBytes = []string{"bytes"}
