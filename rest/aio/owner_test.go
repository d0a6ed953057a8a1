package aio

import (
	"context"
	"errors"
	"testing"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

func TestResolveOwner(t *testing.T) {
	asUID(t, 0)
	cases := []struct {
		name, user string
		wantOK     bool
		want       core.Owner
		wantErr    string
	}{
		{"empty is the daemon", "", false, core.Owner{}, ""},
		{"root by name", "root", true, core.Owner{Uid: 0, Gid: 0}, ""},
		{"root by uid", "0", true, core.Owner{Uid: 0, Gid: 0}, ""},
		{"missing account", "no-such-user-sandfs", false, core.Owner{}, "no such user: no-such-user-sandfs"},
		{"missing uid", "4000000000", false, core.Owner{}, "no such user: 4000000000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, ok, err := ResolveOwner(c.user)
			if c.wantErr != "" {
				var re *httpkit.RequestError
				if !errors.As(err, &re) || re.Msg != c.wantErr || re.Status != 400 {
					t.Fatalf("got %v, want 400 %q", err, c.wantErr)
				}
				return
			}
			if err != nil || ok != c.wantOK || o != c.want {
				t.Fatalf("got %+v %v %v, want %+v %v", o, ok, err, c.want, c.wantOK)
			}
		})
	}
}

func TestResolveOwnerNonRoot(t *testing.T) {
	asUID(t, 501)
	_, _, err := ResolveOwner("root")
	var re *httpkit.RequestError
	want := "cannot run as root: sandfs is running as uid 501 and only root can change identity"
	if !errors.As(err, &re) || re.Msg != want || re.Status != 400 {
		t.Fatalf("got %v, want 400 %q", err, want)
	}
	// A missing account is told as such even when not root.
	_, _, err = ResolveOwner("no-such-user-sandfs")
	if !errors.As(err, &re) || re.Msg != "no such user: no-such-user-sandfs" {
		t.Fatalf("got %v, want no such user", err)
	}
	ctx, err := withOwner(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := core.OwnerOf(ctx); ok {
		t.Errorf("empty user stamped an owner")
	}
}
