package cas

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Missing answers exactly the hashes the store lacks, in their order,
// whether it stats each (a few) or lists the directories (many): absent
// ones, ones whose directory holds others, and malformed ones.
func TestMissing(t *testing.T) {
	s, _ := open(t)
	var present []string
	for i := range listFrom + 100 {
		o, err := s.PutBytes([]byte(fmt.Sprintf("object %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		present = append(present, o.Hash)
	}
	absent := func(i int) string {
		sum := sha256.Sum256([]byte(fmt.Sprintf("never stored %d", i)))
		return hex.EncodeToString(sum[:])
	}
	for _, n := range []int{10, listFrom + 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var ask, want []string
			for i, h := range present[:n] {
				ask = append(ask, h)
				if i%7 == 0 {
					a := absent(i)
					ask, want = append(ask, a), append(want, a)
				}
			}
			for _, bad := range []string{"", "../" + strings.Repeat("0", 61), strings.ToUpper(present[0])} {
				ask, want = append(ask, bad), append(want, bad)
			}
			got, err := s.Missing(ask)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("of %d hashes: missing %d (%v), want %d", len(ask), len(got), err, len(want))
			}
		})
	}
}
