// Package dirent lists a directory held open by descriptor. It is a leaf
// (it imports nothing of sandfs) shared by core and its kernel watch.
package dirent

import (
	"golang.org/x/sys/unix"
)

// Names lists the directory open at fd (on a dup, so fd stays open and at
// its start).
func Names(fd int) ([]string, error) {
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dup)
	ents, err := All(dup)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name
	}
	return names, err
}
