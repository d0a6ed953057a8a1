// Command bbolt is hello world that opens a bbolt database.
package main

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

func main() {
	db, err := bolt.Open(os.Args[len(os.Args)-1], 0o600, nil)
	if err == nil {
		db.Close()
	}
	fmt.Println("hello", err)
}
