// Package english words counts for messages, so that every command and
// package says "1 row" and "2 rows" the same way.
package english

import "fmt"

// Plural says n things: "1 row", "2 rows", "0 rows". word is the singular;
// the plural adds an s.
func Plural[N ~int | ~int64](n N, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
