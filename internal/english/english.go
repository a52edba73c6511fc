// Package english words counts and sizes for messages, so that every
// command and package says "1 row", "2 rows" and "64MiB" the same way.
package english

import (
	"fmt"
	"math"
	"strconv"
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

// byteUnits are the binary units Bytes writes and ParseBytes reads.
var byteUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Bytes writes n in the largest binary unit that divides it exactly
// (64MiB, 1536KiB), or as a plain number of bytes.
func Bytes(n int64) string {
	for _, u := range byteUnits {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseBytes reads a positive size as Bytes writes it: a number of bytes,
// or a whole number of KiB, MiB or GiB (the unit's case does not matter).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mul := int64(1)
	for _, u := range byteUnits {
		if len(t) > len(u.name) && strings.EqualFold(t[len(t)-len(u.name):], u.name) {
			t, mul = strings.TrimSpace(t[:len(t)-len(u.name)]), u.size
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mul {
		return 0, fmt.Errorf("%q: want a positive size in bytes, KiB, MiB or GiB (such as 64MiB)", s)
	}
	return n * mul, nil
}
