package main

import "testing"

// TestOrder: over a full design every kind runs in every position, and
// right after every other kind, equally often.
func TestOrder(t *testing.T) {
	for n := 1; n <= 6; n++ {
		rows := n
		if n%2 == 1 {
			rows = 2 * n
		}
		follows := map[[2]int]int{}
		at := map[[2]int]int{}
		for r := 0; r < rows; r++ {
			k := order(n, r)
			seen := map[int]bool{}
			for j, x := range k {
				if x < 0 || x >= n || seen[x] {
					t.Fatalf("order(%d, %d) = %v: not a permutation", n, r, k)
				}
				seen[x] = true
				at[[2]int{x, j}]++
				if j > 0 {
					follows[[2]int{k[j-1], x}]++
				}
			}
		}
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				if got := at[[2]int{a, b}]; got != rows/n {
					t.Errorf("n=%d: kind %d in position %d %d times, want %d", n, a, b, got, rows/n)
				}
				if a != b && follows[[2]int{a, b}] != rows/n {
					t.Errorf("n=%d: kind %d right after %d %d times, want %d", n, b, a, follows[[2]int{a, b}], rows/n)
				}
			}
		}
	}
}
