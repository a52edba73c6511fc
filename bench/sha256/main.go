// Command sha256 prints the SHA-256 of a file, reading it the way idemport
// does (1 MiB reads, crypto/sha256 with SHA-NI where the CPU has it): the
// anchor for "a rerun costs about one hash of the file".
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%x  %s\n", h.Sum(nil), os.Args[1])
}
