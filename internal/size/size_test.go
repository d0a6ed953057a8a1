package size

import "testing"

func TestParse(t *testing.T) {
	cases := []struct {
		in        string
		fractions bool
		want      int64
		ok        bool
	}{
		{"0", false, 0, true},
		{"1024", false, 1024, true},
		{"64k", false, 64 << 10, true},
		{"64KiB", false, 64 << 10, true},
		{"64MB", false, 64 << 20, true},
		{" 2G ", false, 2 << 30, true},
		{"1T", false, 1 << 40, true},
		{"10B", false, 10, true},
		{"1.5M", false, 0, false},
		{"1.5M", true, 3 << 19, true},
		{"1.5m", true, 3 << 19, true},
		{"500K", true, 500 << 10, true},
		{"", false, 0, false},
		{"", true, 0, false},
		{"lots", true, 0, false},
		{"-1", false, 0, false},
		{"-1K", true, 0, false},
		{"inf", true, 0, false},
		{"NaN", true, 0, false},
		{"99999999999T", false, 0, false},
		{"99999999999T", true, 0, false},
	}
	for _, tc := range cases {
		got, err := Parse(tc.in, tc.fractions)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q, %v): got %d, %v; want %d, ok=%v", tc.in, tc.fractions, got, err, tc.want, tc.ok)
		}
	}
}
