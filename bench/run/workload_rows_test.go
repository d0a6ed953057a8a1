package main

import (
	"reflect"
	"testing"
)

// TestPerRequest: µs of CPU per request round by round, a round that
// counted no request left out.
func TestPerRequest(t *testing.T) {
	got := perRequest([]float64{1.5, 0.2, 3}, []float64{30000, 0, 60000, 5})
	if want := []float64{50, 50}; !reflect.DeepEqual(got, want) {
		t.Errorf("perRequest = %v, want %v", got, want)
	}
	if got := sumRounds([]float64{1, 2, 3}, []float64{0.5, 0.5}); !reflect.DeepEqual(got, []float64{1.5, 2.5}) {
		t.Errorf("sumRounds = %v", got)
	}
}

// TestTopOps: the commonest opcodes per round, ties by name, the rest
// summed.
func TestTopOps(t *testing.T) {
	ops := map[string]int{"LOOKUP": 20000, "GETATTR": 6001, "OPEN": 6001, "READ": 10, "FLUSH": 4}
	if got, want := topOps(ops, 2, 3), "LOOKUP 10,000, GETATTR 3,001, OPEN 3,001 (others 7)"; got != want {
		t.Errorf("topOps = %q, want %q", got, want)
	}
	if got := topOps(nil, 2, 3); got != "none" {
		t.Errorf("topOps(nil) = %q", got)
	}
}

// TestStatCPU: utime+stime of a /proc/PID/stat line, the command's
// parentheses and spaces notwithstanding.
func TestStatCPU(t *testing.T) {
	line := "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 1000 0 0 0 250 130 7 9 20 0 12 0 100 0 0\n"
	if got := statCPU(line); got != 3.8 {
		t.Errorf("statCPU = %v, want 3.8", got)
	}
	if got := statCPU("garbage"); got != 0 {
		t.Errorf("statCPU(garbage) = %v", got)
	}
}

// TestSampled: a median of zero is a figure, no samples are n/a.
func TestSampled(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		unit string
		want string
	}{{[]float64{0, 0}, "req", "0 req"}, {nil, "req", "n/a"}, {[]float64{12345}, "req", "12,345 req"}, {[]float64{0}, "", "0"}} {
		if got := sampled(c.v, c.unit); got != c.want {
			t.Errorf("sampled(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}
