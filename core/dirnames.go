package core

import "sandfs/internal/dirent"

// dirNames lists the directory open at fd (on a dup, so fd stays open and
// at its start).
func dirNames(fd int) ([]string, error) { return dirent.Names(fd) }
