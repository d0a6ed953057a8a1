package main

import (
	"strings"
	"testing"

	"sandfs/core"
)

func TestQuotaFlag(t *testing.T) {
	cases := []struct {
		args []string
		want map[string]core.Quota
		err  string
	}{
		{[]string{"1G"}, map[string]core.Quota{"default": {Bytes: 1 << 30}}, ""},
		{[]string{"512M,10000"}, map[string]core.Quota{"default": {Bytes: 512 << 20, Entries: 10000}}, ""},
		{[]string{"0,50"}, map[string]core.Quota{"default": {Entries: 50}}, ""},
		{[]string{"web=2T,0", "default=10K"}, map[string]core.Quota{"web": {Bytes: 2 << 40}, "default": {Bytes: 10 << 10}}, ""},
		{[]string{"a=1K", "a=2K"}, map[string]core.Quota{"a": {Bytes: 2 << 10}}, ""},
		{[]string{"a/b=1G"}, nil, "without slashes"},
		{[]string{"=1G"}, nil, "without slashes"},
		{[]string{"x=1Q"}, nil, "not a size"},
		{[]string{"1G,many"}, nil, "not a count of entries"},
		{[]string{"1G,-1"}, nil, "not a count of entries"},
		{[]string{"web="}, nil, "want SIZE[,ENTRIES]"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var q quotaFlags
			var err error
			for _, a := range c.args {
				if err = q.Set(a); err != nil {
					break
				}
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(q) != len(c.want) {
				t.Fatalf("got %v, want %v", q, c.want)
			}
			for n, w := range c.want {
				if q.of(n) != w {
					t.Errorf("%s: got %+v, want %+v", n, q.of(n), w)
				}
			}
			if q.of("unnamed") != (core.Quota{}) {
				t.Errorf("a sandbox with no flag has a quota")
			}
		})
	}
}
