package rest

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

func TestXattrRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/f", "x")
	type xr struct {
		Path   string            `json:"path"`
		Xattrs map[string]string `json:"xattrs"`
	}
	v := base64.StdEncoding.EncodeToString([]byte("val\x00ue"))
	r := h.do(t, jsonReq("PUT", "/v2/fs/xattr", `{"path":"/f","name":"user.k","value":"`+v+`"}`))
	if r.Status == 400 && strings.Contains(string(r.Body), "EOPNOTSUPP") {
		testenv.Skip(t, nil, "no user xattrs here")
	}
	got := wantAIO[xr](t, r)
	if want := (xr{"/f", map[string]string{"user.k": v}}); !reflect.DeepEqual(got, want) {
		t.Errorf("set: got %+v, want %+v", got, want)
	}
	if b, err := getxattr(h.host("/f"), "user.k"); err != nil || string(b) != "val\x00ue" {
		t.Errorf("on disk: %q %v", b, err)
	}
	got = wantAIO[xr](t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/f"}))
	if got.Xattrs["user.k"] != v {
		t.Errorf("get: %+v", got)
	}
	got = wantAIO[xr](t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/f&name=user.k"}))
	if len(got.Xattrs) != 1 {
		t.Errorf("get one: %+v", got)
	}
	f := wantAIOError(t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/f&name=user.none"}), 404, "not_found")
	wantErrno(t, f, unix.ENODATA, "OSError")
	got = wantAIO[xr](t, h.do(t, req{Method: "DELETE", Target: "/v2/fs/xattr?path=/f&name=user.k"}))
	if len(got.Xattrs) != 0 {
		t.Errorf("after delete: %+v", got)
	}
	wantAIOError(t, h.do(t, req{Method: "DELETE", Target: "/v2/fs/xattr?path=/f&name=user.k"}), 404, "not_found")
	wantAIOError(t, h.do(t, req{Method: "GET", Target: "/v2/fs/xattr?path=/none"}), 404, "not_found")
	wantAIOError(t, h.do(t, jsonReq("PUT", "/v2/fs/xattr", `{"path":"/f","name":"user.k","value":"!!"}`)), 400, "invalid_request")
	wantValidation(t, h.do(t, jsonReq("PUT", "/v2/fs/xattr", `{"path":"/f","name":"user.k"}`)), "body.value", "missing")
	wantValidation(t, h.do(t, req{Method: "DELETE", Target: "/v2/fs/xattr?path=/f"}), "query.name", "missing")
}

func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 1024)
	n, err := unix.Getxattr(path, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
