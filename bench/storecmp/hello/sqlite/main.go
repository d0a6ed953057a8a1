// Command sqlite is hello world that opens a SQLite database.
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	db, err := sql.Open("sqlite", os.Args[len(os.Args)-1])
	if err == nil {
		err = db.Ping()
		db.Close()
	}
	fmt.Println("hello", err)
}
