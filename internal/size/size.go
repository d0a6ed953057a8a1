// Package size reads a byte count as people write one: a number with an
// optional K, M, G or T suffix (powers of 1024, as rg's --max-filesize and
// the CLI's flags mean them) and an optional trailing "B" or "iB", in any
// case: "64K", "64k", "64KiB" and "64KB" are all 65,536.
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads s as a byte count of zero or more. With fractions the number
// may have one ("1.5M", rounded down to a whole byte), as rg reads
// --max-filesize; without, it must be a whole number. A count over the
// int64 range is an error.
func Parse(s string, fractions bool) (int64, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimSuffix(u, "IB")
	u = strings.TrimSuffix(u, "B")
	mult := int64(1)
	if u != "" {
		switch u[len(u)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			u = u[:len(u)-1]
		}
	}
	u = strings.TrimSpace(u)
	notSize := fmt.Errorf("not a size: %q (want a number of bytes, optionally with K, M, G or T)", s)
	tooLarge := fmt.Errorf("size too large: %q", s)
	if fractions {
		f, err := strconv.ParseFloat(u, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, notSize
		}
		if f*float64(mult) >= math.MaxInt64 {
			return 0, tooLarge
		}
		return int64(f * float64(mult)), nil
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n < 0 {
		return 0, notSize
	}
	if n > math.MaxInt64/mult {
		return 0, tooLarge
	}
	return n * mult, nil
}
