package testenv

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// CPUTime is this process's user+system CPU time.
func CPUTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Settled waits (up to 30 s) for the goroutine count to fall to base, and
// then checks that the process is idle: the abandoned work has stopped.
func Settled(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // they must end; how soon is the machine's
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("goroutines: %d, want back to %d (waited 30 s)", n, base)
	}
	c0 := CPUTime(t)
	time.Sleep(300 * time.Millisecond)
	if used := CPUTime(t) - c0; used > 100*time.Millisecond {
		t.Errorf("the process used %v of CPU in the 300 ms after the cancel, want it idle", used)
	}
}
