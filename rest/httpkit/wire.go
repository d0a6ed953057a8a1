package httpkit

import (
	"fmt"
	"io/fs"

	"sandfs/core"
)

// ModeString is a mode's permission and special bits as the answers of
// every family print them: four octal digits ("0644", "4755" with setuid).
func ModeString(m fs.FileMode) string { return fmt.Sprintf("%04o", core.UnixPerm(m)) }
