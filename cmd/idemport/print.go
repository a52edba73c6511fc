package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// The listings of status, history, rejects list and outbox list: a text
// table, or with --output json one JSON object a line.

// Text output shows names it did not make up (file names, URLs, file IDs,
// tables, values, errors that quote them) with their control characters
// escaped, so that a newline or a terminal escape sequence in a name cannot
// forge a line of output, or of the cron mail it becomes. JSON output
// escapes them by itself.

// esc returns s with its control characters escaped, as Go writes them
// in a string literal: \n, \r, \t, \x1b, \u2028; so are the bytes of
// invalid UTF-8 (\x9b), Unicode's line and paragraph separators, and its
// bidirectional overrides, which reorder what a terminal shows. Everything
// else, backslashes included, is left as it is.
func esc(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !needsEscape(r, n):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError || r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether the rune r, n bytes long, is escaped by esc.
func needsEscape(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // a byte of invalid UTF-8
		return true
	case r < 0x20, r >= 0x7f && r < 0xa0: // C0, DEL and C1 controls
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidirectional embeddings, overrides, isolates
		return true
	}
	return false
}

// textf is fmt.Fprintf for text output: its arguments that are text
// (strings, errors, anything with a String method) are escaped by esc;
// the format, which this command wrote, is not.
func textf(w io.Writer, format string, args ...any) (int, error) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = esc(v)
		case error:
			args[i] = esc(v.Error())
		case fmt.Stringer:
			args[i] = esc(v.String())
		}
	}
	return fmt.Fprintf(w, format, args...)
}

// writeTable writes a text table: header (column names separated by tabs),
// then a row of the cells row gives for each item, in columns two spaces
// apart. With no items it writes the line none instead, unless none is "".
func writeTable[T any](w io.Writer, none, header string, items []T, row func(T) []any) error {
	if len(items) == 0 && none != "" {
		_, err := fmt.Fprintln(w, none)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		for i, cell := range row(it) {
			if i > 0 {
				io.WriteString(tw, "\t")
			}
			io.WriteString(tw, esc(fmt.Sprint(cell)))
		}
		io.WriteString(tw, "\n")
	}
	return tw.Flush()
}

// orDash is s for a text table's cell, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// msTime is a ledger time for a text table: "-" when unset.
func msTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z")
}

// jsonTime is a ledger time for JSON: RFC 3339 in UTC, whole seconds, as
// jq's fromdateiso8601 reads it; empty when unset.
func jsonTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

// writeJSON writes each of vs as one line of JSON (JSON Lines): every
// command's --output json is a stream of objects, one per line.
func writeJSON[T any](w io.Writer, vs ...T) error {
	enc := json.NewEncoder(w)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
