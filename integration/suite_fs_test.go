package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The conformance suite's access paths (posix_test.go). A case that needs
// only the operations below works through suiteFS, whose paths are
// slash-separated and relative to the case's own directory, and runs on
// every path: a directory of the host (the temp dir, the mount) and the
// daemon's HTTP API. A case that needs more (descriptors, modes, links,
// xattrs, locks: syscalls the API has no route for) declares opSyscalls
// and works on its host directory, so it runs on the first two only.

// op is one operation a suite case needs of its access path.
type op uint

const (
	opWrite    op = 1 << iota // suiteFS.Write
	opRead                    // suiteFS.Read
	opMkdir                   // suiteFS.Mkdir
	opMove                    // suiteFS.Move
	opRemove                  // suiteFS.Remove
	opStat                    // suiteFS.Stat
	opList                    // suiteFS.List
	opSyscalls                // anything else, on the case's host directory

	suiteOps = opWrite | opRead | opMkdir | opMove | opRemove | opStat | opList
)

func (o op) String() string {
	var names []string
	for i, n := range []string{"write", "read", "mkdir", "move", "remove", "stat", "list", "syscalls"} {
		if o&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, "|")
}

// suiteFS is the small file interface of the suite's portable cases.
// Errors carry the errno the operation's syscall gives (wantErrno).
type suiteFS interface {
	// Write creates p or replaces its content with what r gives.
	Write(p string, r io.Reader) error
	// Read opens p for reading.
	Read(p string) (io.ReadCloser, error)
	// Mkdir makes the one directory p (EEXIST if p exists, ENOENT if its
	// parent does not).
	Mkdir(p string) error
	// Move renames from to to, refusing an existing to (EEXIST).
	Move(from, to string) error
	// Remove removes a file, or an empty directory (ENOTEMPTY).
	Remove(p string) error
	// Stat describes p, not following a final symlink.
	Stat(p string) (suiteStat, error)
	// List names what directory p holds, sorted.
	List(p string) ([]string, error)
}

type suiteStat struct {
	Size         int64
	Dir, Symlink bool
}

// caseEnv is what a case works on: the small interface, and for a case
// that declares opSyscalls its directory as a host path.
type caseEnv struct {
	fs  suiteFS
	dir string
}

// declaredFS holds a case to what it declared: an operation it did not
// declare fails the case, so the declarations that decide where a case
// runs stay true.
type declaredFS struct {
	t     *testing.T
	fs    suiteFS
	needs op
}

func (d declaredFS) check(o op) {
	d.t.Helper()
	if d.needs&o == 0 {
		d.t.Fatalf("the case uses %v but declares only %v", o, d.needs)
	}
}

func (d declaredFS) Write(p string, r io.Reader) error { d.check(opWrite); return d.fs.Write(p, r) }
func (d declaredFS) Read(p string) (io.ReadCloser, error) {
	d.check(opRead)
	return d.fs.Read(p)
}
func (d declaredFS) Mkdir(p string) error       { d.check(opMkdir); return d.fs.Mkdir(p) }
func (d declaredFS) Move(from, to string) error { d.check(opMove); return d.fs.Move(from, to) }
func (d declaredFS) Remove(p string) error      { d.check(opRemove); return d.fs.Remove(p) }
func (d declaredFS) Stat(p string) (suiteStat, error) {
	d.check(opStat)
	return d.fs.Stat(p)
}
func (d declaredFS) List(p string) ([]string, error) { d.check(opList); return d.fs.List(p) }

// hostFS is suiteFS on a host directory, by the syscalls a program makes.
type hostFS struct{ dir string }

func (h hostFS) path(p string) string { return filepath.Join(h.dir, filepath.FromSlash(p)) }

// Write copies r through a 1 MiB buffer, so a reader that gives whole
// blocks makes one write(2) per block.
func (h hostFS) Write(p string, r io.Reader) error {
	f, err := os.OpenFile(h.path(p), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.CopyBuffer(struct{ io.Writer }{f}, r, make([]byte, 1<<20))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (h hostFS) Read(p string) (io.ReadCloser, error) { return os.Open(h.path(p)) }
func (h hostFS) Mkdir(p string) error                 { return os.Mkdir(h.path(p), 0o755) }
func (h hostFS) Move(from, to string) error {
	return unix.Renameat2(unix.AT_FDCWD, h.path(from), unix.AT_FDCWD, h.path(to), unix.RENAME_NOREPLACE)
}
func (h hostFS) Remove(p string) error { return os.Remove(h.path(p)) }

func (h hostFS) Stat(p string) (suiteStat, error) {
	fi, err := os.Lstat(h.path(p))
	if err != nil {
		return suiteStat{}, err
	}
	return suiteStat{Size: fi.Size(), Dir: fi.IsDir(), Symlink: fi.Mode()&fs.ModeSymlink != 0}, nil
}

func (h hostFS) List(p string) ([]string, error) {
	des, err := os.ReadDir(h.path(p))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names, nil
}

// restFS is suiteFS through the daemon's HTTP API, on sandbox "default":
// the AIO v2 routes (api.md §4), whose failures carry the errno (§2):
// upload and download stream the bytes, mkdir with parents false, move
// with overwrite false, delete with recursive false, stat not following
// symlinks, list.
type restFS struct {
	d    *Daemon
	base string // the API path of the case's directory
}

func (r restFS) api(p string) string { return path.Join(r.base, p) }

// Write streams r as the "file" part of a multipart upload.
func (r restFS) Write(p string, body io.Reader) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", path.Base(p))
		if err == nil {
			_, err = io.Copy(part, body)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", r.d.BaseURL()+"/v2/fs/upload?path="+url.QueryEscape(r.api(p)), pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return r.answer("upload", p, req, nil)
}

func (r restFS) Read(p string) (io.ReadCloser, error) {
	resp, err := r.d.Client().Get(r.d.BaseURL() + "/v2/fs/download?path=" + url.QueryEscape(r.api(p)))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	return nil, aioError("download", p, resp)
}

func (r restFS) Mkdir(p string) error {
	return r.post("mkdir", p, "/v2/fs/mkdir", map[string]any{"path": r.api(p), "parents": false})
}

func (r restFS) Move(from, to string) error {
	return r.post("move", from, "/v2/fs/move", map[string]any{"source": r.api(from), "destination": r.api(to), "overwrite": false})
}

func (r restFS) Remove(p string) error {
	return r.post("delete", p, "/v2/fs/delete", map[string]any{"path": r.api(p), "recursive": false})
}

func (r restFS) Stat(p string) (suiteStat, error) {
	var st struct {
		Size        int64 `json:"size"`
		IsDirectory bool  `json:"is_directory"`
		IsSymlink   bool  `json:"is_symlink"`
	}
	err := r.get("stat", p, "/v2/fs/stat?follow_symlinks=false&path="+url.QueryEscape(r.api(p)), &st)
	return suiteStat{Size: st.Size, Dir: st.IsDirectory, Symlink: st.IsSymlink}, err
}

func (r restFS) List(p string) ([]string, error) {
	var l struct {
		Files []struct {
			Name string `json:"name"`
		} `json:"files"`
		Truncated bool `json:"truncated"`
	}
	if err := r.get("list", p, "/v2/fs/list?path="+url.QueryEscape(r.api(p)), &l); err != nil {
		return nil, err
	}
	if l.Truncated {
		return nil, fmt.Errorf("list %s: truncated", p)
	}
	var names []string
	for _, f := range l.Files {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names, nil
}

func (r restFS) post(op, p, route string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest("POST", r.d.BaseURL()+route, strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return r.answer(op, p, req, nil)
}

func (r restFS) get(op, p, route string, data any) error {
	req, err := http.NewRequest("GET", r.d.BaseURL()+route, nil)
	if err != nil {
		return err
	}
	return r.answer(op, p, req, data)
}

// answer sends req and decodes the data of a successful answer into data
// (nil: none wanted); a failure is aioError's.
func (r restFS) answer(op, p string, req *http.Request, data any) error {
	resp, err := r.d.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return aioError(op, p, resp)
	}
	var env struct {
		Success bool            `json:"success"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("%s %s: the answer is not the AIO envelope: %v", op, p, err)
	}
	if !env.Success {
		return fmt.Errorf("%s %s: 200 with success false: %s", op, p, env.Message)
	}
	if data == nil {
		return nil
	}
	return json.Unmarshal(env.Data, data)
}

// aioError is the failure an AIO v2 answer tells, as the *fs.PathError of
// its errno, so the cases check it as they check a syscall's.
func aioError(op, p string, resp *http.Response) error {
	b, _ := io.ReadAll(resp.Body)
	var env struct {
		Message string `json:"message"`
		Data    struct {
			Errno *int `json:"errno"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &env) != nil || env.Data.Errno == nil {
		return fmt.Errorf("%s %s: %s: %s", op, p, resp.Status, b)
	}
	return &fs.PathError{Op: op, Path: p, Err: unix.Errno(*env.Data.Errno)}
}
