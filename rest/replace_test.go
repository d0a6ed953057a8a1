package rest

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReplaceAsRename: every family's move, rename and copy that may
// replace its destination replaces it as rename(2) does and never more:
// a directory onto a non-empty directory, a file onto a directory and a
// directory onto a file are refused as conflicts in the family's shape,
// and nothing changes; what rename(2) allows (a file over a file, a
// directory over an empty one) is done.
func TestReplaceAsRename(t *testing.T) {
	routes := []struct {
		family, name string
		do           func(h *harness, t *testing.T, src, dst string) resp
	}{
		{FamilyAgent, "POST /v1/fs/move overwrite", func(h *harness, t *testing.T, src, dst string) resp {
			return h.post(t, "/v1/fs/move", fmt.Sprintf(`{"from":%q,"to":%q,"overwrite":true}`, src, dst))
		}},
		{FamilyAIOv2, "POST /v2/fs/move overwrite", func(h *harness, t *testing.T, src, dst string) resp {
			return h.post(t, "/v2/fs/move", fmt.Sprintf(`{"source":%q,"destination":%q,"overwrite":true}`, src, dst))
		}},
		{FamilyAIOv1, "POST /v1/file/move overwrite", func(h *harness, t *testing.T, src, dst string) resp {
			return h.v1(t, "/v1/file/move", fmt.Sprintf(`{"source":%q,"destination":%q,"overwrite":true}`, src, dst))
		}},
		{FamilyAIOv2, "POST /v2/fs/copy overwrite", func(h *harness, t *testing.T, src, dst string) resp {
			return h.post(t, "/v2/fs/copy", fmt.Sprintf(`{"source":%q,"destination":%q,"overwrite":true}`, src, dst))
		}},
		{FamilyAIOv1, "POST /v1/file/copy overwrite", func(h *harness, t *testing.T, src, dst string) resp {
			return h.v1(t, "/v1/file/copy", fmt.Sprintf(`{"source":%q,"destination":%q,"overwrite":true}`, src, dst))
		}},
		{FamilyNamed, "POST /fs/rename", func(h *harness, t *testing.T, src, dst string) resp {
			return h.post(t, "/v1/sandboxes/default/fs/rename", fmt.Sprintf(`{"source":%q,"dest":%q}`, src, dst))
		}},
		{FamilyNamed, "POST /fs/copy", func(h *harness, t *testing.T, src, dst string) resp {
			return h.post(t, "/v1/sandboxes/default/fs/copy", fmt.Sprintf(`{"source":%q,"dest":%q,"recursive":true}`, src, dst))
		}},
	}
	refusals := []struct {
		name, src, dst string
		errno          unix.Errno
		exception      string // the AIO v1 Python exception
	}{
		{"a directory onto a non-empty directory", "/d", "/full", unix.ENOTEMPTY, "OSError"},
		{"a file onto a directory", "/f", "/full", unix.EISDIR, "IsADirectoryError"},
		{"a file onto an empty directory", "/f", "/empty", unix.EISDIR, "IsADirectoryError"},
		{"a directory onto a file", "/d", "/g", unix.ENOTDIR, "NotADirectoryError"},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.writeFile(t, "/d/x", "x")
			h.writeFile(t, "/full/keep", "keep")
			h.mkdir(t, "/empty")
			h.writeFile(t, "/f", "f")
			h.writeFile(t, "/g", "g")
			for _, c := range refusals {
				t.Run(c.name, func(t *testing.T) {
					before := h.tree(t)
					r := rt.do(h, t, c.src, c.dst)
					switch rt.family {
					case FamilyAIOv1:
						wantV1Failure(t, r, "already_exists", c.errno, c.exception)
					case FamilyAIOv2:
						wantAIOError(t, r, 409, "already_exists")
					case FamilyNamed:
						wantNamedError(t, r, 409, unix.ErrnoName(c.errno), c.dst)
					default:
						p := wantProblem(t, r, 409, "conflict")
						if !strings.Contains(p.Detail, c.errno.Error()) {
							t.Errorf("detail %q does not say %q", p.Detail, c.errno.Error())
						}
					}
					h.wantTree(t, before)
				})
			}
			// What rename(2) allows.
			r := rt.do(h, t, "/f", "/g")
			if r.Status != 200 {
				t.Fatalf("a file over a file: %d %s", r.Status, r.Body)
			}
			h.wantFile(t, "/g", "f")
			r = rt.do(h, t, "/d", "/empty")
			if r.Status != 200 {
				t.Fatalf("a directory over an empty one: %d %s", r.Status, r.Body)
			}
			h.wantFile(t, "/empty/x", "x")
			h.wantFile(t, "/full/keep", "keep")
		})
	}
}
