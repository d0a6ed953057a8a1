package cas

import (
	"errors"
	"sort"

	"golang.org/x/sys/unix"
)

// listFrom is how many hashes Missing answers from a listing of the
// store rather than a stat of each: a stat is a path lookup of two names,
// a directory entry read is a small part of that, so past a few thousand
// hashes (a fetched tree's) reading the directories their names fall in
// costs less.
const listFrom = 2048

// Missing answers the hashes of hashes the store lacks, in their order;
// an invalid hash is lacking. Only the directories the hashes fall in are
// read, each once.
func (s *Store) Missing(hashes []string) ([]string, error) {
	var out []string
	if len(hashes) < listFrom {
		for _, h := range hashes {
			if !s.Has(h) {
				out = append(out, h)
			}
		}
		return out, nil
	}
	byDir := map[string][]string{}
	for _, h := range hashes {
		if !ValidHash(h) {
			continue
		}
		d, _ := Split(h)
		byDir[d] = append(byDir[d], h)
	}
	have := make(map[string]bool, len(hashes))
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		names, err := readNames(s.fd, d)
		if errors.Is(err, unix.ENOENT) {
			continue // no object there yet
		} else if err != nil {
			return nil, err
		}
		for _, n := range names {
			have[d+n] = true
		}
	}
	for _, h := range hashes {
		if !have[h] {
			out = append(out, h)
		}
	}
	return out, nil
}
