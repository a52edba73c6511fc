package reader

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
	"github.com/idemport/idemport/reader/text"
)

// garbage returns n deterministic random bytes, about one in eight a NUL.
func garbage(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		if rng.IntN(8) > 0 {
			b[i] = byte(rng.IntN(256))
		}
	}
	return b
}

// textRows returns a CSV with an id and a 64-character hex column, of at
// least n bytes. Random hex compresses badly, so a compressed copy is large.
func textRows(n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	b.WriteString("id,blob\n")
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%d,", i)
		for range 64 {
			b.WriteByte("0123456789abcdef"[rng.IntN(16)])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func gzipped(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t *testing.T, data []byte) []byte {
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zw.Close()
	return zw.EncodeAll(data, nil)
}

// hostileReject is a bad row a hostile file must produce.
type hostileReject struct {
	ordinal int64
	at      string // the row's text: its first occurrence gives the offset
	column  string
	code    string
	message string // a part of the message
}

// hostileCase is a hostile file and what reading it must do: fail with a
// *ParseError (from Open or from Scan) or produce a plan.
type hostileCase struct {
	name  string
	file  string // its extension gives the format and compression
	data  []byte
	build func(t *testing.T) []byte // the file's bytes, when data is nil
	opts  Options

	// A failure: stage is "open" or "scan"; kind is what the error wraps;
	// row is the row it names (-1: any row from 1 on); offset the byte
	// (-1: any byte after 0); reason a part of the message.
	stage  string
	kind   error
	row    int64
	offset int64
	reason string

	// A plan: its row count, its bad rows in order, its schema, and when
	// set the good rows' values (rendered as by render).
	rows    int64
	rejects []hostileReject
	schema  string
	want    [][]any
}

func TestHostileInput(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	manyKeys := func(t *testing.T) []byte {
		var b strings.Builder
		b.WriteString("{\"a\":1}\n{")
		for i := 0; i <= text.MaxJSONColumns; i++ {
			fmt.Fprintf(&b, "\"k%d\":%d,", i, i)
		}
		b.WriteString("\"z\":0}\n")
		return []byte(b.String())
	}
	cases := []hostileCase{
		{name: "empty_file_csv", file: "e.csv", data: []byte{},
			stage: "open", kind: input.ErrEmpty, row: 0, offset: 0, reason: "file is empty"},
		{name: "empty_file_tsv", file: "e.tsv", data: []byte{},
			stage: "open", kind: input.ErrEmpty, row: 0, offset: 0, reason: "file is empty"},
		{name: "empty_file_blank_lines_and_bom", file: "e.csv", data: []byte("\ufeff\r\n\n\r\n\r"),
			stage: "open", kind: input.ErrEmpty, row: 0, offset: 0, reason: "file is empty"},
		{name: "empty_file_gzip", file: "e.csv.gz", build: func(t *testing.T) []byte { return gzipped(t, nil) },
			stage: "open", kind: input.ErrEmpty, row: 0, offset: 0, reason: "file is empty"},
		{name: "empty_file_jsonl", file: "e.jsonl", data: []byte{}, rows: 0, schema: ""},
		{name: "header_only", file: "h.csv", data: []byte("id,name\n"), rows: 0, schema: "id:string,name:string"},
		{name: "header_only_no_newline", file: "h.csv", data: []byte("id,name"), rows: 0, schema: "id:string,name:string"},
		{name: "header_only_lone_cr_at_end", file: "h.csv", data: []byte("id,name\n\r"), rows: 0, schema: "id:string,name:string"},
		{name: "lone_cr_at_end_is_no_row", file: "r.csv", data: []byte("a,b\n1,2\n\r"), rows: 1, schema: "a:int64,b:int64"},
		{name: "lone_cr_at_end_jsonl", file: "r.jsonl", data: []byte("{\"a\":1}\n\r"), rows: 1, schema: "a:int64"},
		{
			// The first line of these bytes is not UTF-8 before any line
			// end or quote.
			name: "binary_garbage_csv", file: "g.csv", data: garbage(1, 4096),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 1: text is not valid UTF-8",
		},
		{
			name: "binary_garbage_tsv", file: "g.tsv", data: garbage(1, 4096),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 1: text is not valid UTF-8",
		},
		{
			// Every line is a bad row; the plan counts them all.
			name: "binary_garbage_jsonl", file: "g.jsonl", data: garbage(1, 4096),
			rows: int64(len(jsonlLines(garbage(1, 4096)))), rejects: allJSONRejects(garbage(1, 4096)), schema: "",
		},
		{
			name: "binary_garbage_after_header", file: "g.csv", data: append([]byte("a,b\n"), garbage(2, 4096)...),
			rows: -1, // checked below: every row bad
		},
		{
			name: "truncated_gzip_tail", file: "t.csv.gz",
			build: func(t *testing.T) []byte { z := gzipped(t, textRows(2<<20)); return z[:len(z)*3/5] },
			stage: "scan", row: -1, offset: -1, reason: "corrupt gzip stream: unexpected EOF",
		},
		{
			name: "truncated_gzip_trailer", file: "t.csv.gz",
			build: func(t *testing.T) []byte { z := gzipped(t, textRows(2<<20)); return z[:len(z)-4] },
			stage: "scan", row: -1, offset: -1, reason: "corrupt gzip stream: unexpected EOF",
		},
		{
			name: "truncated_gzip_jsonl", file: "t.jsonl.gz",
			build: func(t *testing.T) []byte {
				var b bytes.Buffer
				for i := 0; b.Len() < 1<<20; i++ {
					fmt.Fprintf(&b, "{\"id\":%d,\"h\":\"%x\"}\n", i, garbage(uint64(i), 24))
				}
				z := gzipped(t, b.Bytes())
				return z[:len(z)/2]
			},
			stage: "scan", row: -1, offset: -1, reason: "corrupt gzip stream: unexpected EOF",
		},
		{
			name: "truncated_zstd_tail", file: "t.csv.zst",
			build: func(t *testing.T) []byte { z := zstded(t, textRows(2<<20)); return z[:len(z)*3/5] },
			stage: "scan", row: -1, offset: -1, reason: "corrupt zstd stream: unexpected EOF",
		},
		{
			name: "truncated_zstd_last_byte", file: "t.csv.zst",
			build: func(t *testing.T) []byte { z := zstded(t, textRows(2<<20)); return z[:len(z)-1] },
			stage: "scan", row: -1, offset: -1, reason: "corrupt zstd stream: unexpected EOF",
		},
		{
			name: "truncated_gzip_header", file: "t.csv.gz",
			build: func(t *testing.T) []byte { return gzipped(t, textRows(1<<20))[:6] },
			stage: "open", kind: nil, row: 0, offset: 0, reason: "corrupt gzip stream: unexpected EOF",
		},
		{
			name: "ragged_rows", file: "r.csv", data: []byte("a,b,c\n1,2,3\n4,5\n6,7,8,9\n\n10,11,12\n13\n"),
			rows: 5, schema: "a:int64,b:int64,c:int64",
			rejects: []hostileReject{
				{2, "4,5", "", CodeFieldCount, "expected 3 fields, got 2"},
				{3, "6,7", "", CodeFieldCount, "expected 3 fields, got 4"},
				{5, "13", "", CodeFieldCount, "expected 3 fields, got 1"},
			},
		},
		{
			name: "ragged_rows_tsv", file: "r.tsv", data: []byte("a\tb\n1\t2\n3\n4\t5\t\n"),
			rows: 3, schema: "a:int64,b:int64",
			rejects: []hostileReject{
				{2, "3\n", "", CodeFieldCount, "expected 2 fields, got 1"},
				{3, "4\t5\t", "", CodeFieldCount, "expected 2 fields, got 3"},
			},
		},
		{
			name: "invalid_utf8", file: "u.csv", data: []byte("a,b\n1,ok\n2,caf\xe9\n3,\"\xed\xa0\x80\"\n4,\xc3\xa9\n"),
			rows: 4, schema: "a:int64,b:string",
			rejects: []hostileReject{
				{2, "2,caf", "b", CodeUTF8, "not valid UTF-8"},
				{3, "3,\"", "b", CodeUTF8, "not valid UTF-8"},
			},
		},
		{
			name: "invalid_utf8_header", file: "u.csv", data: []byte("id,caf\xe9\n1,2\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 2: text is not valid UTF-8",
		},
		{
			name: "invalid_utf8_jsonl", file: "u.jsonl", data: []byte("{\"s\":\"ok\"}\n{\"s\":\"caf\xe9\"}\n{\"caf\xe9\":1}\n"),
			rows: 3, schema: "s:string",
			rejects: []hostileReject{
				{2, "{\"s\":\"caf", "s", CodeUTF8, "not valid UTF-8"},
				{3, "{\"caf", "", CodeUTF8, "key: text is not valid UTF-8"},
			},
		},
		{
			name: "nul_bytes", file: "n.csv", data: []byte("a,b\n1,x\x00y\n2,\"\x00\"\n3,z\n"),
			rows: 3, schema: "a:int64,b:string",
			rejects: []hostileReject{
				{1, "1,x", "b", value.CodeNUL, "NUL"},
				{2, "2,\"", "b", value.CodeNUL, "NUL"},
			},
		},
		{
			name: "nul_in_json_keys", file: "n.jsonl", data: []byte("{\"a\":1}\n{\"\\u0000\":1}\n{\"a\":\"\\u0000\"}\n"),
			rows: 3, schema: "a:int64",
			rejects: []hostileReject{
				{2, "{\"\\u0000\":1}", "", value.CodeNUL, "key: text contains a NUL byte"},
				{3, "{\"a\":\"\\u0000\"}", "a", value.CodeNUL, "NUL"},
			},
		},
		{
			name: "duplicate_header_names", file: "d.csv", data: []byte("id,name,id\n1,a,2\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: `bad header: columns 1 and 3 are both named "id"`,
		},
		{
			name: "duplicate_header_names_after_trim", file: "d.csv", data: []byte("id, name ,name\n1,a,2\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: `bad header: columns 2 and 3 are both named "name"`,
		},
		{
			name: "empty_header_name", file: "e.csv", data: []byte("id,,name\n1,2,3\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 2 has an empty name",
		},
		{
			name: "blank_header_name", file: "e.csv", data: []byte("id,name, \t\n1,2,3\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 3 has an empty name",
		},
		{
			name: "quoted_empty_header_name", file: "e.csv", data: []byte("\"\",id\n1,2\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 1 has an empty name",
		},
		{
			// A quoted name may hold a line end; the data starts after it.
			// A column name with a line break is no usable name: refused,
			// like the names of a file whose lines end in CR alone.
			name: "quoted_header_spanning_lines", file: "q.csv", data: []byte("\"first\nname\",\"last\n\nname\"\r\nAda,\"Love\nlace\"\r\nbad\r\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: column 1's name holds a line break",
		},
		{
			name: "unterminated_quote_in_header", file: "q.csv", data: []byte("id,\"name\n1,2\n"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header: a quoted field opened on line 1 runs over 2 lines to the end of the file",
		},
		{
			// A quote never closed swallows the rest of the file as one
			// row: a bad row if the file ends first...
			name: "unterminated_quote", file: "q.csv", data: []byte("a,b\n1,x\n2,\"open\n3,y\n"),
			rows: 2, schema: "a:int64,b:string",
			rejects: []hostileReject{{2, "2,\"open", "b", value.CodeQuote, "a quoted field opened on line 3 runs over 2 lines to the end of the file: check for an unescaped quote on line 3"}},
		},
		{
			// ...or a row too large, naming where it starts.
			name: "unterminated_quote_big_file", file: "q.csv",
			data:  append([]byte("a,b\n1,x\n2,\"open\n"), bytes.Repeat([]byte("3,y\n"), 50_000)...),
			opts:  Options{MaxRowBytes: 64 << 10},
			stage: "scan", kind: input.ErrTooLarge, row: 2, offset: 8, reason: "row exceeds the size limit of 65536 bytes",
		},
		{
			name: "stray_quote", file: "q.csv", data: []byte("a,b\n1,\"x\"y\n2,ab\"c\n3,\"p\" \n"),
			rows: 3, schema: "a:int64,b:string",
			rejects: []hostileReject{
				{1, "1,\"x\"y", "b", value.CodeQuote, "unexpected character after a closing quote"},
				{3, "3,\"p\"", "b", value.CodeQuote, "unexpected character after a closing quote"},
			},
		},
		{
			// Old Mac line ends: no LF at all, so the whole file is the
			// header, whose names hold CRs, and there are no rows. It must
			// be refused, not imported as zero rows.
			name: "cr_only_line_ends", file: "m.csv", data: []byte("id,name\r1,alice\r2,bob\r"),
			stage: "open", kind: input.ErrHeader, row: 0, offset: 0, reason: "bad header",
		},
		{
			// With an LF after the header, the CR-only rows are one row
			// with too many fields: refused, not silently merged.
			name: "cr_only_line_ends_after_header", file: "m.csv", data: []byte("id,name\n1,alice\r2,bob\r"),
			rows: 1, schema: "id:string,name:string",
			rejects: []hostileReject{{1, "1,alice", "", CodeFieldCount, "expected 2 fields, got 3"}},
		},
		{
			name: "deeply_nested_json", file: "d.jsonl", data: []byte("{\"a\":1}\n{\"a\":" + deep + "}\n{\"b\":" + strings.Repeat("[", 1<<16) + "\n"),
			rows: 3, schema: "a:int64",
			rejects: []hostileReject{
				{2, "{\"a\":[[", "", CodeJSON, "too big depth"},
				{3, "{\"b\":[[[[", "", CodeJSON, "too big depth"},
			},
		},
		{
			// The last value of a key wins, as in encoding/json.
			name: "json_duplicate_keys", file: "k.jsonl", data: []byte("{\"a\":1,\"a\":2}\n{\"a\":3,\"b\":\"x\",\"a\":null}\n"),
			rows: 2, schema: "a:int64,b:string",
			want: [][]any{{"2", nil}, {nil, "x"}},
		},
		{
			// Text bound for a json column is quoted as JSON, not as Go:
			// \u0007, not \a; U+E0001 as itself, not \U000e0001.
			name: "json_column_strings", file: "j.jsonl", data: []byte("{\"j\":{\"x\":1}}\n{\"j\":\"bell\\u0007 tag\\udb40\\udc01 del\\u007f \\\"q\\\" \\\\ \\n\"}\n{\"j\":[\"\\u0007\"]}\n"),
			rows: 3, schema: "j:json",
			want: [][]any{{`{"x":1}`}, {"\"bell\\u0007 tag\U000e0001 del\x7f \\\"q\\\" \\\\ \\n\""}, {`["\u0007"]`}},
		},
		{
			name: "json_numbers_not_json", file: "n.jsonl", data: []byte("{\"n\":1.5}\n{\"n\":1.2.3}\n{\"n\":NaN}\n{\"n\":+5}\n{\"n\":[01]}\n{\"n\":2}\n"),
			rows: 6, schema: "n:float64",
			rejects: []hostileReject{
				{2, "{\"n\":1.2.3}", "n", CodeJSON, "not a number"},
				{3, "{\"n\":NaN}", "n", CodeJSON, "not a number"},
				{4, "{\"n\":+5}", "n", CodeJSON, "not a number"},
				{5, "{\"n\":[01]}", "n", CodeJSON, "invalid JSON"},
			},
		},
		{
			// 1e999 is no float64: the column is text. -0 is the integer 0.
			name: "json_big_numbers", file: "n.jsonl", data: []byte("{\"n\":1e999,\"z\":-0}\n{\"n\":-1e999,\"z\":0}\n{\"n\":1e200000,\"z\":0}\n"),
			rows: 3, schema: "n:string,z:int64",
			want: [][]any{{"1e999", "0"}, {"-1e999", "0"}, {"1e200000", "0"}},
		},
		{
			name: "json_unpaired_surrogates", file: "s.jsonl", data: []byte("{\"s\":\"\\ud83d\\ude00\"}\n{\"s\":\"\\ud800\"}\n{\"s\":\"\\ud800\\u0041\"}\n{\"s\":{\"t\":\"\\udc00\"}}\n"),
			rows: 4, schema: "s:string",
			rejects: []hostileReject{
				{2, "{\"s\":\"\\ud800\"}", "", CodeUTF8, "surrogate"},
				{3, "{\"s\":\"\\ud800\\u0041", "", CodeUTF8, "surrogate"},
				{4, "{\"s\":{", "", CodeUTF8, "surrogate"},
			},
		},
		{
			// A key column's key first appears in row 2: row 1 has no
			// key, so it is bad, in the plan as in the partition reader.
			name: "json_key_column_appearing_late", file: "k.jsonl", data: []byte("{}\n{\"id\":1}\n{\"x\":2}\n"),
			opts: Options{NotNull: []string{"id"}},
			// x's only value is in a bad row, which inference ignores.
			rows: 3, schema: "id:int64,x:string",
			rejects: []hostileReject{
				{1, "{}", "id", value.CodeNull, "a key column must have a value"},
				{3, "{\"x\":2}", "id", value.CodeNull, "a key column must have a value"},
			},
		},
		{
			name: "json_too_many_keys", file: "k.jsonl", build: manyKeys,
			stage: "scan", kind: text.ErrTooManyKeys, row: 2, offset: 8, reason: "more than 1000 distinct keys",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			if tc.build != nil {
				data = tc.build(t)
			}
			path := writeFile(t, tc.file, data)
			if tc.stage != "" {
				checkHostileError(t, tc, path)
				return
			}
			f := openChecked(t, path, tc.opts)
			plan, err := f.Scan(context.Background(), ScanOptions{PartitionRows: 2, KeepRejects: 1000})
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if tc.rows == -1 { // every row bad
				if plan.Rows == 0 || plan.Rejected != plan.Rows {
					t.Fatalf("rows %d rejected %d, want all of at least one bad", plan.Rows, plan.Rejected)
				}
			} else if plan.Rows != tc.rows || plan.Rejected != int64(len(tc.rejects)) {
				t.Fatalf("rows %d rejected %d, want %d and %d: %+v", plan.Rows, plan.Rejected, tc.rows, len(tc.rejects), plan.Rejects)
			}
			if tc.rows != -1 {
				if got := schemaString(plan.Schema); got != tc.schema {
					t.Fatalf("schema %q, want %q", got, tc.schema)
				}
				for i, w := range tc.rejects {
					g := plan.Rejects[i]
					off := int64(bytes.Index(data, []byte(w.at)))
					if off < 0 {
						t.Fatalf("bad test: %q not in the data", w.at)
					}
					if g.Ordinal != w.ordinal || g.Offset != off || g.Column != w.column || g.Code != w.code || !strings.Contains(g.Message, w.message) {
						t.Fatalf("reject %d: %+v\nwant ordinal %d offset %d column %q code %q message with %q", i, g, w.ordinal, off, w.column, w.code, w.message)
					}
				}
			}
			rows, ords := readPlan(t, f, plan, 3)
			if int64(len(rows)) != plan.Rows-plan.Rejected || int64(len(ords)) != plan.Rows-plan.Rejected {
				t.Fatalf("read %d rows, want %d", len(rows), plan.Rows-plan.Rejected)
			}
			if tc.want != nil && !reflect.DeepEqual(rows, tc.want) {
				t.Fatalf("got  %q\nwant %q", rows, tc.want)
			}
		})
	}
}

// allJSONRejects lists every line of data as a bad JSON row.
func allJSONRejects(data []byte) []hostileReject {
	var out []hostileReject
	for i, l := range jsonlLines(data) {
		out = append(out, hostileReject{int64(i + 1), string(l.text), "", CodeJSON, ""})
	}
	return out
}

// checkHostileError checks that reading path fails as tc says.
func checkHostileError(t *testing.T, tc hostileCase, path string) {
	t.Helper()
	f, err := OpenPath(path, tc.opts)
	if tc.stage == "scan" {
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var plan *Plan
		plan, err = f.Scan(context.Background(), ScanOptions{})
		if err == nil {
			t.Fatalf("scan: got a plan of %d rows, want an error", plan.Rows)
		}
	} else if err == nil {
		t.Fatalf("open: got a file with header %q, want an error", f.Header())
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v (%T), want a *ParseError", err, err)
	}
	if tc.kind != nil && !errors.Is(err, tc.kind) {
		t.Fatalf("got %v, want it to wrap %v", err, tc.kind)
	}
	msg := err.Error()
	if pe.Path != path || !strings.HasPrefix(msg, path+" ") && !strings.HasPrefix(msg, path+":") {
		t.Fatalf("%q does not name the file %s", msg, path)
	}
	switch {
	case tc.row == -1 && pe.Row < 1, tc.row >= 0 && pe.Row != tc.row:
		t.Fatalf("%q names row %d, want %d", msg, pe.Row, tc.row)
	case tc.row > 0 && !strings.Contains(msg, fmt.Sprintf(": row %d ", tc.row)):
		t.Fatalf("%q does not say row %d", msg, tc.row)
	}
	switch {
	case tc.offset == -1 && pe.Offset < 1, tc.offset >= 0 && pe.Offset != tc.offset:
		t.Fatalf("%q names byte %d, want %d", msg, pe.Offset, tc.offset)
	case !strings.Contains(msg, fmt.Sprintf("(byte %d)", pe.Offset)):
		t.Fatalf("%q does not say byte %d", msg, pe.Offset)
	}
	if !strings.Contains(msg, tc.reason) {
		t.Fatalf("%q does not give the reason %q", msg, tc.reason)
	}
}

// writeHugeField streams a CSV whose second data row has a field of size
// bytes (quoted if quote is set) to a new file, without holding it.
func writeHugeField(t *testing.T, size int, quote bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "huge.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("id,blob\n1,small\n2,")
	if quote {
		w.WriteByte('"')
	}
	chunk := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz"), 1<<15)
	for n := 0; n < size; n += len(chunk) {
		w.Write(chunk[:min(len(chunk), size-n)])
	}
	if quote {
		w.WriteByte('"')
	}
	w.WriteString("\n3,small\n")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHostileHugeField plans a CSV with a 100 MB field under the default
// 64 MiB row limit: the scan must refuse the row with ErrTooLarge, naming
// it, after allocating well under twice the limit (the row is never held
// whole, and the buffer does not keep doubling past the limit).
func TestHostileHugeField(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 100 MB file")
	}
	const size = 100_000_000
	for _, quote := range []bool{false, true} {
		t.Run(map[bool]string{false: "unquoted", true: "quoted"}[quote], func(t *testing.T) {
			path := writeHugeField(t, size, quote)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f, err := OpenPath(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := f.Scan(context.Background(), ScanOptions{})
			runtime.ReadMemStats(&after)
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, input.ErrTooLarge) {
				t.Fatalf("got %v, %v; want a *ParseError wrapping ErrTooLarge", plan, err)
			}
			if pe.Path != path || pe.Row != 2 || pe.Offset != int64(len("id,blob\n1,small\n")) {
				t.Fatalf("%v: want row 2 at byte 16 of %s", err, path)
			}
			want := fmt.Sprintf("%s: row 2 (byte 16): row exceeds the size limit of %d bytes", path, input.DefaultMaxRowBytes)
			if err.Error() != want {
				t.Fatalf("got  %q\nwant %q", err.Error(), want)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB to refuse a %d MB row (limit %d MiB)", alloc>>20, size/1_000_000, input.DefaultMaxRowBytes>>20)
			if limit := uint64(input.DefaultMaxRowBytes) * 3 / 2; alloc > limit {
				t.Fatalf("allocated %d bytes, more than 1.5 times the %d-byte limit", alloc, input.DefaultMaxRowBytes)
			}
		})
	}
}
