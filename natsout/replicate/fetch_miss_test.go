package replicate

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// An object the manifest names that the broker answers missing is asked
// again before the fetch fails (fetch.go says why): one that comes within
// the tries is fetched byte for byte, with the others; one that never
// comes fails the fetch as missing, after missTries asks, not before.
func TestFetchAsksAgainForMissing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // when the late object is put; 0: never
	}{
		{"arrives after the first ask", missWait},
		{"never arrives", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, kv := smallFleet(t)
			hashes, sizes, body := smallObjects(t, kv, 20, 2<<10)
			late := bytes.Repeat([]byte("late object;"), 300)
			lh := sum(late)
			hashes, sizes[lh], body[lh] = append(hashes, lh), int64(len(late)), late
			put := make(chan error, 1)
			if tc.after > 0 {
				go func() {
					time.Sleep(tc.after)
					_, err := kv.Put(ctx, lh, late)
					put <- err
				}()
			}
			dst := target(t, "alpha")
			t0 := time.Now()
			n, err := h.f.fetchAll(ctx, nil, storePut(dst), hashes, sizes)
			took := time.Since(t0)
			if tc.after == 0 {
				if !errors.Is(err, errMissing) {
					t.Fatalf("fetch of an object never put: %v, want it missing", err)
				}
				// The waits between the asks: missWait, doubled each time.
				if least := missWait * (1<<(missTries-1) - 1); took < least {
					t.Fatalf("gave up after %v, before its %d asks (%v of waits)", took, missTries, least)
				}
				return
			}
			if err != nil {
				t.Fatalf("fetch with an object put %v late: %v", tc.after, err)
			}
			if err := <-put; err != nil {
				t.Fatal(err)
			}
			if want := total(hashes, sizes); n != want {
				t.Fatalf("fetched %d bytes, want %d", n, want)
			}
			wantObjects(t, dst, hashes, body)
		})
	}
}
