package reader

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// fuzzEncodings are the encodings FuzzEncoding reads files in: single-byte
// tables, multibyte encodings whose trail bytes may be ASCII, a stateful
// one, and UTF-16.
var fuzzEncodings = []string{"windows-1252", "iso-8859-2", "koi8-r", "shift_jis", "euc-jp", "euc-kr", "gbk", "gb18030", "big5", "iso-2022-jp", "utf-16le", "utf-16be"}

// FuzzEncoding reads arbitrary bytes as a CSV file in one of
// fuzzEncodings (a byte order mark deciding, as the reader's does). It
// checks the invariants of checkFile on any input; and when x/text
// decodes the bytes without replacing any (no U+FFFD: every byte is a
// character of the encoding), that the file reads exactly as its UTF-8
// text does: the same header, rows, bad rows and partitions.
func FuzzEncoding(f *testing.F) {
	addSeeds(f, "FuzzCSV", false, func(_ string, data []byte) [][]any {
		return [][]any{{data, byte(0)}, {data, byte(3)}, {data, byte(10)}}
	})
	for i, name := range []string{"cp1252.windows-1252.csv", "latin.iso-8859-1.csv", "sjis.shift_jis.csv", "utf16.bom.csv"} {
		b, err := os.ReadFile(filepath.Join("../testdata/encodings", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte{0, 0, 3, 10}[i])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, enc byte) {
		name := fuzzEncodings[int(enc)%len(fuzzEncodings)]
		partRows := int64(enc/16%4) + 1
		opts := Options{Format: CSV, Encoding: name}
		var e encoding.Encoding
		switch {
		case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
			e = unicode.UTF8
		case bytes.HasPrefix(data, []byte("\xff\xfe")):
			e = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
		case bytes.HasPrefix(data, []byte("\xfe\xff")):
			e = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
		case name == "utf-16le":
			e = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
		case name == "utf-16be":
			e = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
		default:
			var err error
			if e, err = htmlindex.Get(name); err != nil {
				t.Fatal(err)
			}
		}
		body := data
		if e != unicode.UTF8 && (bytes.HasPrefix(data, []byte("\xff\xfe")) || bytes.HasPrefix(data, []byte("\xfe\xff"))) {
			body = data[2:]
		}
		text, _, err := transform.Bytes(e.NewDecoder(), body)
		path := fuzzFile(t, dir, "enc.csv", data)
		if err != nil || bytes.Contains(text, []byte("\uFFFD")) || e == unicode.UTF8 {
			// Bytes that are no character: the rows holding them are bad,
			// or the file's defect stops the reading; either way checkFile's
			// invariants of what is read hold, with offsets in the text.
			f, err := OpenPath(path, opts)
			if err != nil {
				return
			}
			plan, err := f.Scan(t.Context(), ScanOptions{PartitionRows: partRows, KeepRejects: 1 << 20})
			if err != nil {
				return
			}
			res := fuzzResult{rows: map[int64][]any{}, bad: map[int64]bool{}}
			for _, r := range plan.Rejects {
				res.bad[r.Ordinal] = true
			}
			for _, p := range plan.Partitions {
				readFuzzPartition(t, f, plan, p, 2, res)
			}
			return
		}
		if len(text) > 4*fuzzMaxRow {
			return
		}
		got := checkFile(t, path, text, opts, partRows, 2)
		want := checkFile(t, fuzzFile(t, dir, "utf8.csv", text), text, Options{Format: CSV}, partRows, 2)
		if (got.err() == nil) != (want.err() == nil) {
			t.Fatalf("in %s: %v; as UTF-8: %v", name, got.err(), want.err())
		}
		if got.err() != nil {
			if strings.Replace(got.err().Error(), "enc.csv", "utf8.csv", 1) != want.err().Error() {
				t.Fatalf("in %s: %v; as UTF-8: %v", name, got.err(), want.err())
			}
			return
		}
		if !reflect.DeepEqual(got.header, want.header) || !reflect.DeepEqual(got.plan, want.plan) ||
			!reflect.DeepEqual(got.rows, want.rows) || !reflect.DeepEqual(got.bad, want.bad) {
			t.Fatalf("in %s the file reads\n%q %+v %v\nas UTF-8\n%q %+v %v", name, got.header, got.plan, got.rows, want.header, want.plan, want.rows)
		}
	})
}

// FuzzNoHeader reads arbitrary bytes as a CSV or TSV file without a
// header, and the same bytes after a header line naming the columns as
// --no-header named them: both read the same rows, bad rows and types,
// row for row; and with --columns the names given replace column1…N.
func FuzzNoHeader(f *testing.F) {
	addSeeds(f, "FuzzCSV", false, func(_ string, data []byte) [][]any {
		return [][]any{{data, byte(0)}, {data, byte(1)}, {data, byte(6)}}
	})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		opts := Options{Format: CSV}
		delim := ","
		if mode&1 != 0 {
			opts.Format, opts.Quotes, delim = TSV, mode&2 != 0, "\t"
		}
		partRows := int64(mode>>2%4) + 1
		path := fuzzFile(t, dir, "nh.csv", data)
		nh := opts
		nh.NoHeader = true
		got := checkFile(t, path, data, nh, partRows, 2)
		if got.err() != nil {
			return // the first row is malformed (or too large, or there is none)
		}
		if len(got.header) == 0 || got.header[0] != "column1" {
			t.Fatalf("--no-header named the columns %q", got.header)
		}
		body := bytes.TrimPrefix(data, bom)
		withHeader := append([]byte(strings.Join(got.header, delim)+"\n"), body...)
		want := checkFile(t, fuzzFile(t, dir, "h.csv", withHeader), withHeader, opts, partRows, 2)
		if want.err() != nil {
			t.Fatalf("with a header: %v; without: fine", want.err())
		}
		if !reflect.DeepEqual(got.header, want.header) || got.plan.Rows != want.plan.Rows || !reflect.DeepEqual(got.plan.Schema, want.plan.Schema) ||
			!reflect.DeepEqual(got.rows, want.rows) || !reflect.DeepEqual(got.bad, want.bad) {
			t.Fatalf("without a header\n%q %d rows %v bad %v\nwith one\n%q %d rows %v bad %v", got.header, got.plan.Rows, got.rows, got.bad, want.header, want.plan.Rows, want.rows, want.bad)
		}
		named := nh
		for i := range got.header {
			named.Names = append(named.Names, "n"+got.header[i])
		}
		again := checkFile(t, path, data, named, partRows, 2)
		if again.err() != nil || !reflect.DeepEqual(again.header, named.Names) || !reflect.DeepEqual(again.rows, got.rows) {
			t.Fatalf("with --columns %q: %v, header %q", named.Names, again.err(), again.header)
		}
	})
}
