// Command pebble is hello world that opens a Pebble database.
package main

import (
	"fmt"
	"os"

	"github.com/cockroachdb/pebble"
)

func main() {
	db, err := pebble.Open(os.Args[len(os.Args)-1], &pebble.Options{})
	if err == nil {
		db.Close()
	}
	fmt.Println("hello", err)
}
