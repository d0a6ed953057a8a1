package precond

import (
	"errors"
	"fmt"
	"testing"
)

func TestHolds(t *testing.T) {
	const cur = `"1-2-3"`
	cases := []struct {
		p       Precondition
		current string
		want    bool
	}{
		{Precondition{}, "", true},
		{Precondition{}, cur, true},
		{Precondition{IfNoneMatch: true}, "", true},
		{Precondition{IfNoneMatch: true}, cur, false},
		{Precondition{IfMatch: []string{"*"}}, cur, true},
		{Precondition{IfMatch: []string{"*"}}, "", false},
		{Precondition{IfMatch: []string{`"0-0-0"`, cur}}, cur, true},
		{Precondition{IfMatch: []string{"W/" + cur}}, cur, true},
		{Precondition{IfMatch: []string{`"0-0-0"`}}, cur, false},
	}
	for _, c := range cases {
		if got := c.p.Holds(c.current); got != c.want {
			t.Errorf("%+v.Holds(%q): got %v, want %v", c.p, c.current, got, c.want)
		}
	}
	if (Precondition{}).Set() || !(Precondition{IfNoneMatch: true}).Set() || !(Precondition{IfMatch: []string{"*"}}).Set() {
		t.Error("Set: only the zero value expects nothing")
	}
}

func TestError(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &Error{Op: "write", Path: "/f", Current: IdentityETag(0x1a, 2, 3)})
	if !errors.Is(err, ErrFailed) {
		t.Errorf("%v: not ErrFailed", err)
	}
	if want := `wrapped: write /f: precondition failed: the current ETag is "1a-2-3"`; err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
	if got, want := (&Error{Op: "remove", Path: "/g"}).Error(), "remove /g: precondition failed: the file does not exist"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
