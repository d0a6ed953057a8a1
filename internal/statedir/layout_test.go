package statedir

import "testing"

// TestDefault: --state, then SANDFS_STATE, XDG_STATE_HOME (when absolute)
// and HOME, in that order.
func TestDefault(t *testing.T) {
	cases := []struct {
		name, flag string
		env        map[string]string
		want       string
	}{
		{"flag wins", "/s/flag", map[string]string{"SANDFS_STATE": "/s/env", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s/flag"},
		{"SANDFS_STATE", "", map[string]string{"SANDFS_STATE": "/s/env", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/s/env"},
		{"XDG_STATE_HOME", "", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/sandfs"},
		{"relative XDG_STATE_HOME is ignored", "", map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/sandfs"},
		{"HOME", "", map[string]string{"HOME": "/h"}, "/h/.local/state/sandfs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Default(tc.flag, func(k string) string { return tc.env[k] })
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
