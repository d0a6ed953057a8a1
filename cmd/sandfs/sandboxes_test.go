package main

import (
	"testing"

	"sandfs/core"
)

func TestParseQuota(t *testing.T) {
	for _, c := range []struct {
		in   string
		want core.Quota
		ok   bool
	}{
		{"0", core.Quota{}, true},
		{"1G", core.Quota{Bytes: 1 << 30}, true},
		{"512K,100", core.Quota{Bytes: 512 << 10, Entries: 100}, true},
		{"0,7", core.Quota{Entries: 7}, true},
		{"2MiB,0", core.Quota{Bytes: 2 << 20}, true},
		{"", core.Quota{}, false},
		{"lots", core.Quota{}, false},
		{"1G,", core.Quota{}, false},
		{"1G,-1", core.Quota{}, false},
		{"1G,x", core.Quota{}, false},
		{"-5", core.Quota{}, false},
	} {
		got, err := parseQuota(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseQuota(%q) = %+v, %v; want %+v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	var f quotaFlag
	if err := f.Set("1M,9"); err != nil || f.String() != "1MiB,9" {
		t.Errorf("quotaFlag 1M,9: %q %v", f.String(), err)
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
