//go:build race

package rest

// raceEnabled: the race detector slows byte-by-byte Go code (multipart
// parsing) by an order of magnitude; tests moving gigabytes scale down.
const raceEnabled = true
