package main

import (
	"testing"

	"sandfs/core"
)

// TestDefaultQuotaFlag: --default-quota takes one SIZE[,ENTRIES]
// (parseQuota of quota_flags.go), no NAME=.
func TestDefaultQuotaFlag(t *testing.T) {
	for _, c := range []struct {
		in, out string
		want    core.Quota
		ok      bool
	}{
		{"1M,9", "1MiB,9", core.Quota{Bytes: 1 << 20, Entries: 9}, true},
		{"10G", "10GiB", core.Quota{Bytes: 10 << 30}, true},
		{"0,5", "0,5", core.Quota{Entries: 5}, true},
		{"lots", "", core.Quota{}, false},
		{"1G,x", "", core.Quota{}, false},
	} {
		var f quotaFlag
		err := f.Set(c.in)
		if (err == nil) != c.ok || (c.ok && (core.Quota(f) != c.want || f.String() != c.out)) {
			t.Errorf("--default-quota %s: %+v %q %v; want %+v %q ok %v", c.in, f, f.String(), err, c.want, c.out, c.ok)
		}
	}
}

func TestCheckMountAll(t *testing.T) {
	base := t.TempDir()
	for _, c := range []struct {
		dir, mnt string
		ok       bool
	}{
		{"", base + "/mnt", true},
		{base + "/sb", "", true},
		{base + "/sb", base + "/mnt", true},
		{base + "/sb", base + "/sbx", true},
		{base + "/sb", base + "/sb/mnt", false},
		{base + "/sb", base + "/sb", false},
		{base + "/all/sb", base + "/all", false},
	} {
		if err := checkMountAll(c.dir, c.mnt); (err == nil) != c.ok {
			t.Errorf("checkMountAll(%q, %q) = %v, want ok %v", c.dir, c.mnt, err, c.ok)
		}
	}
}
