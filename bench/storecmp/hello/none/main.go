// Command none is the baseline hello world for the build measure.
package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println("hello", len(os.Args)) }
