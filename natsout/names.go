package natsout

import (
	"fmt"
	"strings"
)

// EncodeName is a sandbox name made fit for a KV bucket's name or a KV
// key: a byte outside [A-Za-z0-9-] written as _XX (hex), so two names
// never share one. A DNS label (every sandbox name) is itself.
func EncodeName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}
