package rest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/url"
	"os"
	"strconv"
	"strings"

	"sandfs/rest/aio"
)

// Hostile request bodies for the hostile-input table (hostile_test.go):
// tar archives and multipart forms.

func tarOf(entries ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("t"), int(h.Size)))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// badSparseTar is a GNU sparse archive (PAX format 1.0) whose data runs
// past what its map references: archive/tar fails its read with
// "sparse file contains unreferenced data".
func badSparseTar() []byte {
	rec := func(k, v string) string {
		s := " " + k + "=" + v + "\n"
		for d := 1; ; d++ {
			if total := len(s) + d; len(strconv.Itoa(total)) == d {
				return strconv.Itoa(total) + s
			}
		}
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	recs := rec("GNU.sparse.major", "1") + rec("GNU.sparse.minor", "0") + rec("GNU.sparse.name", "f") + rec("GNU.sparse.realsize", "10")
	tw.WriteHeader(&tar.Header{Name: "PaxHeaders/f", Size: int64(len(recs)), Mode: 0o644, Format: tar.FormatUSTAR})
	tw.Write([]byte(recs))
	tw.Flush()
	// tar.Writer makes no PAX header by hand: the first header is made a
	// regular one, then turned into one ('x') and its checksum redone.
	raw := b.Bytes()
	raw[156] = 'x'
	copy(raw[148:156], "        ")
	sum := 0
	for _, c := range raw[:512] {
		sum += int(c)
	}
	copy(raw[148:156], fmt.Sprintf("%06o\x00 ", sum))
	data := append([]byte("1\n0\n5\n"), make([]byte, 512-6)...)
	data = append(data, "hello, and more than the map says"...)
	tw.WriteHeader(&tar.Header{Name: "GNUSparseFile.0/f", Size: int64(len(data)), Mode: 0o644, Format: tar.FormatUSTAR})
	tw.Write(data)
	tw.Close()
	return b.Bytes()
}

// sparseTar is a 3 KiB GNU sparse archive (GNU tar -S) of one 1 TiB hole.
func sparseTar() []byte {
	b, err := os.ReadFile("../core/tar/testdata/sparse-1t.tar")
	if err != nil {
		panic(err)
	}
	return b
}

func tarCases(rt Route, add func(hostileCase)) {
	q := "?path=" + url.QueryEscape("/up")
	tgt := rt.Path + q
	tarHdr := map[string]string{"Content-Type": "application/x-tar"}
	body := func(b []byte) func() io.Reader { return func() io.Reader { return bytes.NewReader(b) } }
	many := make([]*tar.Header, hostileLimits.tarEntries+1)
	for i := range many {
		many[i] = &tar.Header{Name: fmt.Sprintf("f%d", i), Size: 1}
	}
	for label, b := range map[string][]byte{
		"garbage":               bytes.Repeat([]byte("not a tar "), 200),
		"truncated":             tarOf(&tar.Header{Name: "ok", Size: 1000})[:700],
		"dotdot entry":          tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "../../escape", Size: 1}),
		"absolute entry":        tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "/etc/escape", Size: 1}),
		"name over 255":         tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: longName, Size: 1}),
		"path over 4096":        tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: strings.TrimPrefix(longPath, "/"), Size: 1}),
		"symlink out then file": tarOf(&tar.Header{Name: "out", Typeflag: tar.TypeSymlink, Linkname: "../../outside"}, &tar.Header{Name: "out/x", Size: 1}),
		"hard link outside":     tarOf(&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../outside/secret.txt"}),
		"device":                tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
		"too many entries":      tarOf(many...),
		"over extracted bytes":  tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "big", Size: hostileLimits.tarBytes + 1}),
		"sparse 1 TiB":          sparseTar(),
	} {
		add(hostileCase{name: "tar " + label, target: tgt, body: body(b), header: tarHdr, mustFail: true})
	}
	add(hostileCase{name: "tar malformed sparse", target: tgt, body: body(badSparseTar()), header: tarHdr, mustFail: true, status: []int{400}})
	overBody := tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "big", Size: hostileLimits.tar + 1})
	add(hostileCase{name: "tar over the body limit", target: tgt, body: body(overBody), header: tarHdr, mustFail: true, status: []int{413}})
	add(hostileCase{name: "tar over the body limit, chunked", target: tgt, body: body(overBody), header: tarHdr, chunked: true, mustFail: true, status: []int{413}})
	add(hostileCase{name: "tar with a JSON content type", target: tgt, body: body(tarOf(&tar.Header{Name: "ok", Size: 1})),
		header: map[string]string{"Content-Type": "application/json"}, mustFail: true, status: []int{415}})
}

// sandboxdMultipartCases are the forms a sandboxd PUT refuses: no "file"
// part, no boundary, garbage, a form cut short, a file over the upload
// limit.
func sandboxdMultipartCases(add func(hostileCase)) {
	form := func(fields [][2]string, file []byte) (func() io.Reader, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range fields {
			mw.WriteField(f[0], f[1])
		}
		if file != nil {
			fw, _ := mw.CreateFormFile("file", "f.txt")
			fw.Write(file)
		}
		mw.Close()
		b := buf.Bytes()
		return func() io.Reader { return bytes.NewReader(b) }, mw.FormDataContentType()
	}
	r, ct := form([][2]string{{"path", "/up.txt"}}, nil)
	add(hostileCase{name: "multipart without a file", body: r, header: map[string]string{"Content-Type": ct}, mustFail: true, status: []int{400}})
	add(hostileCase{name: "multipart garbage", body: func() io.Reader { return strings.NewReader("garbage") },
		header: map[string]string{"Content-Type": "multipart/form-data; boundary=xyz"}, mustFail: true, status: []int{400}})
	add(hostileCase{name: "multipart without a boundary", body: func() io.Reader { return strings.NewReader("--\r\n") },
		header: map[string]string{"Content-Type": "multipart/form-data"}, mustFail: true, status: []int{400}})
	r, ct = form(nil, bytes.Repeat([]byte("x"), 1000))
	add(hostileCase{name: "multipart truncated", body: func() io.Reader {
		b, _ := io.ReadAll(r())
		return bytes.NewReader(b[:len(b)/2])
	}, header: map[string]string{"Content-Type": ct}, mustFail: true, status: []int{400}})
	r, ct = form(nil, bytes.Repeat([]byte("x"), int(hostileLimits.tar)+1))
	add(hostileCase{name: "multipart file over the upload limit", body: r, header: map[string]string{"Content-Type": ct}, mustFail: true, status: []int{413}})
}

func multipartCases(add func(hostileCase)) {
	form := func(fields [][2]string, file bool) (func() io.Reader, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range fields {
			mw.WriteField(f[0], f[1])
		}
		if file {
			fw, _ := mw.CreateFormFile("file", "f.txt")
			fw.Write([]byte("uploaded"))
		}
		mw.Close()
		b := buf.Bytes()
		return func() io.Reader { return bytes.NewReader(b) }, mw.FormDataContentType()
	}
	for label, v := range badPaths {
		r, ct := form([][2]string{{"path", v}}, true)
		add(hostileCase{name: "multipart path " + label, body: r, header: map[string]string{"Content-Type": ct}, mustFail: true})
	}
	r, ct := form([][2]string{{"path", strings.Repeat("p", aio.MaxFormField+1)}}, true)
	add(hostileCase{name: "multipart field over its limit", body: r, header: map[string]string{"Content-Type": ct}, mustFail: true, status: []int{413}})
	r, ct = form([][2]string{{"path", "/up.txt"}}, false)
	add(hostileCase{name: "multipart without a file", body: r, header: map[string]string{"Content-Type": ct}, mustFail: true})
	add(hostileCase{name: "multipart garbage", body: func() io.Reader { return strings.NewReader("garbage") },
		header: map[string]string{"Content-Type": "multipart/form-data; boundary=xyz"}, mustFail: true})
	add(hostileCase{name: "multipart without a boundary", body: func() io.Reader { return strings.NewReader("--\r\n") },
		header: map[string]string{"Content-Type": "multipart/form-data"}, mustFail: true})
	add(hostileCase{name: "multipart truncated", body: func() io.Reader {
		b, _ := io.ReadAll(r())
		return bytes.NewReader(b[:len(b)/2])
	}, header: map[string]string{"Content-Type": ct}, mustFail: true})
}
