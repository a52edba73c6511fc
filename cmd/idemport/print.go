package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// The listings of status, history, rejects list and outbox list: a text
// table, or with --output json one JSON object a line.

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
			fmt.Fprint(tw, cell)
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
