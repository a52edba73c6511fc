// Package english words counts for messages, so that every command and
// package says "1 row" and "2 rows" the same way.
package english

import (
	"fmt"
	"strings"
)

// Plural says n things: "1 row", "2 rows", "0 rows". word is the singular;
// the plural adds an s, or turns a final consonant and y into ies
// ("2 event deliveries").
func Plural[N ~int | ~int64](n N, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if l := len(word); l >= 2 && word[l-1] == 'y' && !strings.ContainsRune("aeiou", rune(word[l-2])) {
		return fmt.Sprintf("%d %sies", n, word[:l-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Verb picks the form of a verb that agrees with n things: Verb(1, "is",
// "are") is "is", Verb(2, "is", "are") and Verb(0, "is", "are") are "are".
func Verb[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
