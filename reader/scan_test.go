package reader

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
)

// writeFile writes data to a new file called name in a fresh temporary
// directory and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openChecked opens path with a checked allocator that must be empty when
// the test ends.
func openChecked(t *testing.T, path string, opts Options) *File {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	opts.Allocator = mem
	f, err := OpenPath(path, opts)
	if err != nil {
		t.Fatalf("open %s: %v", filepath.Base(path), err)
	}
	if f.cols != nil {
		t.Cleanup(f.cols.Close) // the decoders kept for partitions not read (before AssertSize)
	}
	return f
}

// scanChecked opens and plans path.
func scanChecked(t *testing.T, path string, opts Options, so ScanOptions) (*File, *Plan) {
	t.Helper()
	f := openChecked(t, path, opts)
	plan, err := f.Scan(context.Background(), so)
	if err != nil {
		t.Fatalf("scan %s: %v", filepath.Base(path), err)
	}
	return f, plan
}

// readPart reads partition p of plan on its own, rendering each row as its
// values in schema order (nil for null). It returns the first error of
// Partition or Next.
func readPart(f *File, plan *Plan, p Partition, batchRows int) (rows [][]any, ords []int64, rejected int64, err error) {
	pr, err := f.Partition(plan, p, batchRows)
	if err != nil {
		return nil, nil, 0, err
	}
	defer pr.Close()
	for {
		b, err := pr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return rows, ords, pr.Rejected(), err
		}
		if int(b.Record.NumRows()) != len(b.Ordinals) {
			b.Release()
			return rows, ords, pr.Rejected(), fmt.Errorf("batch of %d rows has %d ordinals", b.Record.NumRows(), len(b.Ordinals))
		}
		if batchRows > 0 && len(b.Ordinals) > batchRows {
			b.Release()
			return rows, ords, pr.Rejected(), fmt.Errorf("batch of %d rows, limit %d", len(b.Ordinals), batchRows)
		}
		for i := 0; i < int(b.Record.NumRows()); i++ {
			row := make([]any, len(plan.Schema))
			for c := range plan.Schema {
				row[c] = render(b.Record.Column(c), i)
			}
			rows = append(rows, row)
		}
		ords = append(ords, b.Ordinals...)
		b.Release()
	}
	// Next keeps returning io.EOF.
	if _, err := pr.Next(); err != io.EOF {
		return rows, ords, pr.Rejected(), fmt.Errorf("Next after EOF: %v", err)
	}
	return rows, ords, pr.Rejected(), nil
}

// readPlan reads every partition of plan, last first, so that no partition
// relies on an earlier one having been read. It checks that each partition
// yields ordinals inside its range and skips exactly its planned bad rows,
// and returns the rows in ordinal order.
func readPlan(t *testing.T, f *File, plan *Plan, batchRows int) ([][]any, []int64) {
	t.Helper()
	parts := make([][][]any, len(plan.Partitions))
	partOrds := make([][]int64, len(plan.Partitions))
	for k := len(plan.Partitions) - 1; k >= 0; k-- {
		p := plan.Partitions[k]
		rows, ords, rejected, err := readPart(f, plan, p, batchRows)
		if err != nil {
			t.Fatalf("partition %d: %v", k, err)
		}
		if rejected != p.Rejected {
			t.Fatalf("partition %d skipped %d bad rows, the plan says %d", k, rejected, p.Rejected)
		}
		if int64(len(ords))+rejected != p.Rows {
			t.Fatalf("partition %d: %d good + %d bad rows, the plan says %d", k, len(ords), rejected, p.Rows)
		}
		for i, o := range ords {
			if o < p.First || o >= p.First+p.Rows || (i > 0 && o <= ords[i-1]) {
				t.Fatalf("partition %d (rows %d..%d): ordinals %v", k, p.First, p.First+p.Rows-1, ords)
			}
		}
		parts[k], partOrds[k] = rows, ords
	}
	var rows [][]any
	var ords []int64
	for k := range parts {
		rows = append(rows, parts[k]...)
		ords = append(ords, partOrds[k]...)
	}
	return rows, ords
}

func schemaString(s Schema) string {
	var parts []string
	for _, c := range s {
		parts = append(parts, c.Name+":"+c.Type.String())
	}
	return strings.Join(parts, ",")
}

func seq(from, n int64) []int64 {
	out := make([]int64, 0, n)
	for i := int64(0); i < n; i++ {
		out = append(out, from+i)
	}
	return out
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, partition.Castagnoli) }

// csvShape says how to lay out a generated CSV file.
type csvShape struct {
	name      string
	eol       string
	bom       bool
	blank     bool // blank lines before some rows and at the end
	multiline bool // quoted text fields with newlines, quotes and commas
	noFinal   bool // no line end after the last row
}

// genCSV lays out n rows (id, text, n) in shape and returns the file, the
// expected rows and, for each row, the offset where the previous row ended
// (partition starts include the blank lines before a row) and where it ends.
func genCSV(sh csvShape, n int) (data []byte, want [][]any, pre, end []int64) {
	var b strings.Builder
	if sh.bom {
		b.WriteString("\ufeff")
	}
	b.WriteString("id,text,n" + sh.eol)
	for i := 1; i <= n; i++ {
		pre = append(pre, int64(b.Len()))
		if sh.blank && i%3 == 1 {
			b.WriteString(sh.eol)
			if i%2 == 1 {
				b.WriteString(sh.eol)
			}
		}
		text := fmt.Sprintf("row %d", i)
		field := text
		if sh.multiline && i%2 == 0 {
			text = fmt.Sprintf("row %d\nsays \"hi\", twice%s\n", i, sh.eol)
			field = `"` + strings.ReplaceAll(text, `"`, `""`) + `"`
		}
		var num any = fmt.Sprint(i * 10)
		numField := fmt.Sprint(i * 10)
		if i%4 == 0 {
			num, numField = nil, ""
		}
		b.WriteString(fmt.Sprintf("%d,%s,%s", i, field, numField))
		if i < n || !sh.noFinal {
			b.WriteString(sh.eol)
		}
		end = append(end, int64(b.Len()))
		want = append(want, []any{fmt.Sprint(i), text, num})
	}
	if sh.blank && !sh.noFinal {
		b.WriteString(sh.eol + sh.eol)
	}
	return []byte(b.String()), want, pre, end
}

func TestPartitions(t *testing.T) {
	shapes := []csvShape{
		{name: "lf", eol: "\n"},
		{name: "crlf", eol: "\r\n"},
		{name: "bom", eol: "\n", bom: true},
		{name: "no_final_newline", eol: "\n", noFinal: true},
		{name: "crlf_no_final_newline", eol: "\r\n", noFinal: true},
		{name: "blank_lines", eol: "\n", blank: true},
		{name: "blank_lines_crlf", eol: "\r\n", blank: true},
		{name: "multiline", eol: "\n", multiline: true},
		{name: "multiline_crlf_bom", eol: "\r\n", multiline: true, bom: true},
		{name: "multiline_no_final_newline", eol: "\n", multiline: true, noFinal: true},
		{name: "everything", eol: "\r\n", bom: true, blank: true, multiline: true, noFinal: true},
	}
	for _, sh := range shapes {
		for _, n := range []int{1, 2, 7, 10} {
			for _, size := range []int64{1, 2, 3, 5, 10, 100} {
				t.Run(fmt.Sprintf("%s/rows=%d/partition=%d", sh.name, n, size), func(t *testing.T) {
					data, want, pre, end := genCSV(sh, n)
					path := writeFile(t, "f.csv", data)
					f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: size})
					if got := schemaString(plan.Schema); got != "id:int64,text:string,n:int64" {
						t.Fatalf("schema %s", got)
					}
					if plan.Rows != int64(n) || plan.Rejected != 0 {
						t.Fatalf("rows %d rejected %d, want %d and 0: %+v", plan.Rows, plan.Rejected, n, plan.Rejects)
					}
					wantParts := (int64(n) + size - 1) / size
					if int64(len(plan.Partitions)) != wantParts {
						t.Fatalf("%d partitions, want %d", len(plan.Partitions), wantParts)
					}
					for k, p := range plan.Partitions {
						first := int64(k)*size + 1
						rows := min(size, int64(n)-first+1)
						last := first + rows - 1
						if p.Index != k || p.First != first || p.Rows != rows || p.Rejected != 0 {
							t.Fatalf("partition %d: %+v, want first %d rows %d", k, p, first, rows)
						}
						if p.Offset != pre[first-1] || p.Length != end[last-1]-pre[first-1] {
							t.Fatalf("partition %d: offset %d length %d, want %d and %d", k, p.Offset, p.Length, pre[first-1], end[last-1]-pre[first-1])
						}
						if crc := crc32c(data[p.Offset : p.Offset+p.Length]); p.CRC != crc {
							t.Fatalf("partition %d: crc %08x, want %08x", k, p.CRC, crc)
						}
					}
					// Each partition alone, last first, in batches of 2.
					for k := len(plan.Partitions) - 1; k >= 0; k-- {
						p := plan.Partitions[k]
						rows, ords, rejected, err := readPart(f, plan, p, 2)
						if err != nil {
							t.Fatalf("partition %d: %v", k, err)
						}
						if rejected != 0 {
							t.Fatalf("partition %d rejected %d rows", k, rejected)
						}
						if !reflect.DeepEqual(ords, seq(p.First, p.Rows)) {
							t.Fatalf("partition %d: ordinals %v, want %v", k, ords, seq(p.First, p.Rows))
						}
						if w := want[p.First-1 : p.First-1+p.Rows]; !reflect.DeepEqual(rows, w) {
							t.Fatalf("partition %d:\ngot  %q\nwant %q", k, rows, w)
						}
					}
				})
			}
		}
	}
}

func TestPartitionBoundaryInsideQuotes(t *testing.T) {
	// Rows whose quoted fields hold line ends that look like rows, so a
	// reader that cut at line ends instead of rows would see other rows.
	var b strings.Builder
	b.WriteString("id,text\n")
	var want [][]any
	for i := 1; i <= 6; i++ {
		text := fmt.Sprintf("%d,fake\n%d,fake too\n", i+100, i+200)
		fmt.Fprintf(&b, "%d,\"%s\"\n", i, text)
		want = append(want, []any{fmt.Sprint(i), text})
	}
	path := writeFile(t, "q.csv", []byte(b.String()))
	for _, size := range []int64{1, 2, 4} {
		t.Run(fmt.Sprintf("partition=%d", size), func(t *testing.T) {
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: size})
			if plan.Rows != 6 || plan.Rejected != 0 {
				t.Fatalf("rows %d rejected %d", plan.Rows, plan.Rejected)
			}
			rows, ords := readPlan(t, f, plan, 1)
			if !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(ords, seq(1, 6)) {
				t.Fatalf("got %q %v", rows, ords)
			}
		})
	}
}

func TestPartitionBatches(t *testing.T) {
	data, want, _, _ := genCSV(csvShape{eol: "\n"}, 25)
	path := writeFile(t, "b.csv", data)
	f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 10})
	for _, batch := range []int{0, 1, 3, 10, 11, 1000} {
		t.Run(fmt.Sprint("batch=", batch), func(t *testing.T) {
			rows, ords := readPlan(t, f, plan, batch)
			if !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(ords, seq(1, 25)) {
				t.Fatalf("got %q %v", rows, ords)
			}
		})
	}
}

func TestHeaderOnly(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"newline", "a,b\n"},
		{"no_newline", "a,b"},
		{"crlf", "a,b\r\n"},
		{"blank_lines_after", "a,b\n\n\r\n\n"},
		{"bom", "\ufeffa,b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "h.csv", []byte(tc.data))
			f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 2})
			if got := strings.Join(f.Header(), ","); got != "a,b" {
				t.Fatalf("header %q", got)
			}
			if plan.Rows != 0 || len(plan.Partitions) != 0 || plan.Rejected != 0 {
				t.Fatalf("plan %+v", plan)
			}
			if got := schemaString(plan.Schema); got != "a:string,b:string" {
				t.Fatalf("schema %s", got)
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"zero_bytes", ""},
		{"blank_lines", "\n\r\n\n"},
		{"bom_only", "\ufeff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "e.csv", []byte(tc.data))
			_, err := OpenPath(path, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, input.ErrEmpty) {
				t.Fatalf("got %v (%T), want a *ParseError wrapping ErrEmpty", err, err)
			}
			if pe.Path != path {
				t.Fatalf("path %q", pe.Path)
			}
		})
	}
}

func TestBadHeader(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"empty_name", "a,,b\n1,2,3\n"},
		{"empty_last_name", "a,b,\n1,2,3\n"},
		{"blank_name", "a, ,b\n1,2,3\n"},
		{"quoted_empty_name", "a,\"\",b\n1,2,3\n"},
		{"duplicate", "a,b,a\n1,2,3\n"},
		{"duplicate_after_trim", "a, a\n1,2\n"},
		{"duplicate_quoted", "\"a\",a\n1,2\n"},
		{"invalid_utf8", "a,\xff\n1,2\n"},
		{"nul", "a,b\x00\n1,2\n"},
		{"stray_after_quote", "a,\"b\"c\n1,2\n"},
		{"unterminated_quote", "a,\"b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "h.csv", []byte(tc.data))
			_, err := OpenPath(path, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, input.ErrHeader) {
				t.Fatalf("got %v (%T), want a *ParseError wrapping ErrHeader", err, err)
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		path := writeFile(t, "h.csv", []byte(" a ,\"b,c\",\"d\"\"e\"\n1,2,3\n"))
		f := openChecked(t, path, Options{})
		if got := f.Header(); !reflect.DeepEqual(got, []string{"a", "b,c", `d"e`}) {
			t.Fatalf("header %q", got)
		}
	})
}

func TestRejects(t *testing.T) {
	type rej struct {
		ordinal int64
		at      string // the row's text: its first occurrence gives the offset
		column  string
		value   string
		code    string
	}
	type rejectCase struct {
		name    string
		data    string
		opts    Options
		rows    int64
		rejects []rej
		schema  string
		want    [][]any // good rows, in order
		ords    []int64
	}
	// textCase is a case of the text check of column b, a string: row i
	// of its file holds i and cells[i-1]'s text (as written, quoted or
	// not), rejected with its code, or kept where the code is "".
	textCase := func(name string, opts Options, cells ...[2]string) rejectCase {
		tc := rejectCase{name: name, data: "a,b\n", opts: opts, rows: int64(len(cells)), schema: "a:int64,b:string"}
		for i, c := range cells {
			row, v := fmt.Sprintf("%d,%s", i+1, c[0]), strings.Trim(c[0], `"`)
			tc.data += row + "\n"
			if c[1] != "" {
				tc.rejects = append(tc.rejects, rej{int64(i + 1), row, "b", v, c[1]})
				continue
			}
			tc.want = append(tc.want, []any{fmt.Sprint(i + 1), v})
			tc.ords = append(tc.ords, int64(i+1))
		}
		return tc
	}
	cases := []rejectCase{
		{
			name: "type",
			data: "id,n\n1,10\n2,x\n3,30\n4,4.5\n",
			opts: Options{Types: map[string]idemtype.Type{"n": idemtype.Int64}},
			rows: 4,
			rejects: []rej{
				{2, "2,x", "n", "x", value.CodeType},
				{4, "4,4.5", "n", "4.5", value.CodeType},
			},
			schema: "id:int64,n:int64",
			want:   [][]any{{"1", "10"}, {"3", "30"}},
			ords:   []int64{1, 3},
		},
		{
			name: "type_quoted_value",
			data: "id,t\n1,2024-01-02T00:00:00Z\n2,\"not, a time\"\n",
			opts: Options{Types: map[string]idemtype.Type{"t": idemtype.Timestamp}},
			rows: 2,
			rejects: []rej{
				{2, "2,\"not", "t", "not, a time", value.CodeType},
			},
			schema: "id:int64,t:timestamptz",
			want:   [][]any{{"1", "2024-01-02T00:00:00.000000Z"}},
			ords:   []int64{1},
		},
		{
			name: "field_count",
			data: "a,b\n1,2\n3\n4,5,6\n7,8\n,\n",
			rows: 5,
			rejects: []rej{
				{2, "3\n", "", "", CodeFieldCount},
				{3, "4,5,6", "", "", CodeFieldCount},
			},
			schema: "a:int64,b:int64",
			want:   [][]any{{"1", "2"}, {"7", "8"}, {nil, nil}},
			ords:   []int64{1, 4, 5},
		},
		{
			name: "stray_after_quote",
			data: "a,b\n1,\"x\"y\n\"p\" ,2\n3,z\n",
			rows: 3,
			rejects: []rej{
				{1, "1,\"x\"y", "b", "x", value.CodeQuote},
				{2, "\"p\" ,2", "a", "p", value.CodeQuote},
			},
			schema: "a:int64,b:string",
			want:   [][]any{{"3", "z"}},
			ords:   []int64{3},
		},
		{
			name: "unterminated_quote_at_eof",
			data: "a,b\n1,x\n2,\"never closed\n3,y\n",
			rows: 2,
			rejects: []rej{
				{2, "2,\"never", "b", "never closed\n3,y\n", value.CodeQuote},
			},
			schema: "a:int64,b:string",
			want:   [][]any{{"1", "x"}},
			ords:   []int64{1},
		},
		{
			name: "not_null",
			data: "id,v\n1,a\n,b\n3,\n4,d\n",
			opts: Options{NotNull: []string{"id"}},
			rows: 4,
			rejects: []rej{
				{2, ",b", "id", "", value.CodeNull},
			},
			schema: "id:int64,v:string",
			want:   [][]any{{"1", "a"}, {"3", nil}, {"4", "d"}},
			ords:   []int64{1, 3, 4},
		},
		{
			name: "not_null_two_columns",
			data: "id,v\n1,a\n2,\n,c\n4,d\n",
			opts: Options{NotNull: []string{"id", "v"}},
			rows: 4,
			rejects: []rej{
				{2, "2,\n", "v", "", value.CodeNull},
				{3, ",c", "id", "", value.CodeNull},
			},
			schema: "id:int64,v:string",
			want:   [][]any{{"1", "a"}, {"4", "d"}},
			ords:   []int64{1, 4},
		},
		{
			// A quoted empty field is null for a non-text type, so it
			// cannot fill a key column of that type.
			name: "not_null_quoted_empty_forced_int",
			data: "id,v\n1,a\n\"\",b\n3,c\n",
			opts: Options{NotNull: []string{"id"}, Types: map[string]idemtype.Type{"id": idemtype.Int64}},
			rows: 3,
			rejects: []rej{
				{2, "\"\",b", "id", "", value.CodeNull},
			},
			schema: "id:int64,v:string",
			want:   [][]any{{"1", "a"}, {"3", "c"}},
			ords:   []int64{1, 3},
		},
		{
			// A quoted empty field is a value of a string key column.
			name:   "not_null_quoted_empty_string",
			data:   "id,v\n1,a\n\"\",b\n",
			opts:   Options{NotNull: []string{"id"}},
			rows:   2,
			schema: "id:string,v:string",
			want:   [][]any{{"1", "a"}, {"", "b"}},
			ords:   []int64{1, 2},
		},
		{
			// Bad rows do not count towards inference: without them a
			// would be a string and b a float.
			name: "rejects_do_not_infer",
			data: "a,b\n1,2\nx,3,extra\n\xff,4.5\n5,\"bad\"x\n6,7\n",
			rows: 5,
			rejects: []rej{
				{2, "x,3", "", "", CodeFieldCount},
				{3, "\xff,4.5", "a", "\xff", CodeUTF8},
				{4, "5,\"bad", "b", "bad", value.CodeQuote},
			},
			schema: "a:int64,b:int64",
			want:   [][]any{{"1", "2"}, {"6", "7"}},
			ords:   []int64{1, 5},
		},
		{
			// A row rejected for a forced column does not let its other
			// values widen an inferred one.
			name: "reject_in_forced_column_does_not_infer",
			data: "a,b\n1,2\nhello,x\n3,4\n",
			opts: Options{Types: map[string]idemtype.Type{"b": idemtype.Int64}},
			rows: 3,
			rejects: []rej{
				{2, "hello,x", "b", "x", value.CodeType},
			},
			schema: "a:int64,b:int64",
			want:   [][]any{{"1", "2"}, {"3", "4"}},
			ords:   []int64{1, 3},
		},
		{
			name: "offsets_with_bom_crlf_and_blank_lines",
			data: "\ufeffa,b\r\n\r\n1,2\r\n\r\n\r\nbad\r\n3,4\r\n",
			rows: 3,
			rejects: []rej{
				{2, "bad", "", "", CodeFieldCount},
			},
			schema: "a:int64,b:int64",
			want:   [][]any{{"1", "2"}, {"3", "4"}},
			ords:   []int64{1, 3},
		},
	}
	cases = append(cases,
		textCase("utf8", Options{}, [2]string{"ok", ""}, [2]string{"bad\xff\xfe", CodeUTF8}, [2]string{"\"q\xc3\"", CodeUTF8}, [2]string{"caf\xc3\xa9", ""}),
		textCase("utf8_forced_string", Options{Types: map[string]idemtype.Type{"b": idemtype.String}}, [2]string{"\xff", CodeUTF8}, [2]string{"x", ""}),
		textCase("nul", Options{}, [2]string{"x\x00y", value.CodeNUL}, [2]string{"\"p\x00\"", value.CodeNUL}, [2]string{"z", ""}),
		// Rows of eight bytes and more, which the splitter reads a word
		// at a time: a NUL or a byte past ASCII in any word, or after the
		// last, is found.
		textCase("nul_in_long_rows", Options{}, [2]string{"abc\x00defghijklmnop", value.CodeNUL}, [2]string{"abcdefghijklmnop\x00", value.CodeNUL},
			[2]string{"abcdefgh\xc3\xa9ijklmnop", ""}, [2]string{"abcdef\xffghijklmnop", CodeUTF8}),
	)
	for _, tc := range cases {
		for _, size := range []int64{1, 2, 100} {
			t.Run(fmt.Sprintf("%s/partition=%d", tc.name, size), func(t *testing.T) {
				path := writeFile(t, "r.csv", []byte(tc.data))
				f, plan := scanChecked(t, path, tc.opts, ScanOptions{PartitionRows: size, KeepRejects: 100})
				if plan.Rows != tc.rows || plan.Rejected != int64(len(tc.rejects)) {
					t.Fatalf("rows %d rejected %d, want %d and %d: %+v", plan.Rows, plan.Rejected, tc.rows, len(tc.rejects), plan.Rejects)
				}
				if len(plan.Rejects) != len(tc.rejects) {
					t.Fatalf("rejects %+v", plan.Rejects)
				}
				for i, w := range tc.rejects {
					g := plan.Rejects[i]
					off := int64(strings.Index(tc.data, w.at))
					if off < 0 {
						t.Fatalf("bad test: %q not in the data", w.at)
					}
					if g.Ordinal != w.ordinal || g.Offset != off || g.Column != w.column || g.Value != w.value || g.Code != w.code || g.Message == "" {
						t.Fatalf("reject %d: %+v\nwant ordinal %d offset %d column %q value %q code %q", i, g, w.ordinal, off, w.column, w.value, w.code)
					}
				}
				var perPart int64
				for _, p := range plan.Partitions {
					perPart += p.Rejected
					var in int64
					for _, w := range tc.rejects {
						if w.ordinal >= p.First && w.ordinal < p.First+p.Rows {
							in++
						}
					}
					if p.Rejected != in {
						t.Fatalf("partition %d counts %d bad rows, want %d", p.Index, p.Rejected, in)
					}
				}
				if perPart != plan.Rejected {
					t.Fatalf("partitions count %d bad rows, the plan %d", perPart, plan.Rejected)
				}
				if got := schemaString(plan.Schema); got != tc.schema {
					t.Fatalf("schema %s, want %s", got, tc.schema)
				}
				rows, ords := readPlan(t, f, plan, 2)
				if !reflect.DeepEqual(rows, tc.want) || !reflect.DeepEqual(ords, tc.ords) {
					t.Fatalf("got  %q %v\nwant %q %v", rows, ords, tc.want, tc.ords)
				}
			})
		}
	}
}

func TestRejectValueTruncated(t *testing.T) {
	long := strings.Repeat("x", 3000)
	path := writeFile(t, "l.csv", []byte("n\n1\n"+long+"\n"))
	_, plan := scanChecked(t, path, Options{Types: map[string]idemtype.Type{"n": idemtype.Int64}}, ScanOptions{KeepRejects: 1})
	if plan.Rejected != 1 || len(plan.Rejects) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	if got := plan.Rejects[0].Value; got != long[:reject.MaxValue] {
		t.Fatalf("value of %d bytes, want %d", len(got), reject.MaxValue)
	}
}

func TestKeepRejects(t *testing.T) {
	var b strings.Builder
	b.WriteString("n\n")
	for i := 1; i <= 20; i++ {
		if i%4 == 0 {
			fmt.Fprintf(&b, "bad%d\n", i)
		} else {
			fmt.Fprintf(&b, "%d\n", i)
		}
	}
	path := writeFile(t, "k.csv", []byte(b.String()))
	for _, keep := range []int{0, 1, 3, 5, 100} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			_, plan := scanChecked(t, path, Options{Types: map[string]idemtype.Type{"n": idemtype.Int64}}, ScanOptions{PartitionRows: 3, KeepRejects: keep})
			if plan.Rows != 20 || plan.Rejected != 5 {
				t.Fatalf("rows %d rejected %d", plan.Rows, plan.Rejected)
			}
			if len(plan.Rejects) != min(keep, 5) {
				t.Fatalf("kept %d rejects, want %d", len(plan.Rejects), min(keep, 5))
			}
			for i, r := range plan.Rejects {
				if r.Ordinal != int64(4*(i+1)) || r.Value != fmt.Sprintf("bad%d", 4*(i+1)) {
					t.Fatalf("reject %d: %+v", i, r)
				}
			}
		})
	}
}

// TestSourceChanged plans a 9-row file in partitions of 3, rewrites it and
// checks which partitions notice.
func TestSourceChanged(t *testing.T) {
	const orig = "id,name\n1,alpha\n2,bravo\n3,charlie\n4,delta\n5,echo\n6,foxtrot\n7,golf\n8,hotel\n9,india\n"
	cut := func(s string) int { return strings.Index(orig, s) }
	for _, tc := range []struct {
		name    string
		edit    func(string) string
		changed []bool // per partition: reading it fails with ErrSourceChanged
	}{
		{
			name:    "byte_in_partition_1",
			edit:    func(s string) string { return strings.Replace(s, "echo", "ecHo", 1) },
			changed: []bool{false, true, false},
		},
		{
			name:    "byte_making_a_bad_row",
			edit:    func(s string) string { return strings.Replace(s, "5,echo", "x,echo", 1) },
			changed: []bool{false, true, false},
		},
		{
			name:    "line_end_in_partition_1",
			edit:    func(s string) string { return strings.Replace(s, "5,echo\n", "5,echo,", 1) },
			changed: []bool{false, true, false},
		},
		{
			name:    "truncated_inside_last_row",
			edit:    func(s string) string { return s[:len(s)-3] },
			changed: []bool{false, false, true},
		},
		{
			name:    "truncated_after_last_row_line_end",
			edit:    func(s string) string { return s[:len(s)-1] },
			changed: []bool{false, false, true},
		},
		{
			name:    "truncated_at_partition_2",
			edit:    func(s string) string { return s[:cut("7,golf")] },
			changed: []bool{false, false, true},
		},
		{
			name:    "truncated_inside_partition_1",
			edit:    func(s string) string { return s[:cut("5,echo")] },
			changed: []bool{false, true, true},
		},
		{
			name:    "truncated_to_header",
			edit:    func(s string) string { return s[:cut("1,alpha")] },
			changed: []bool{true, true, true},
		},
		{
			name:    "partition_0_longer",
			edit:    func(s string) string { return strings.Replace(s, "bravo", "bravoo", 1) },
			changed: []bool{true, true, true},
		},
		{
			name:    "partition_1_longer",
			edit:    func(s string) string { return strings.Replace(s, "echo", "echoes", 1) },
			changed: []bool{false, true, true},
		},
		{
			name:    "row_inserted_in_partition_1",
			edit:    func(s string) string { return strings.Replace(s, "5,echo\n", "5,echo\n5,echo\n", 1) },
			changed: []bool{false, true, true},
		},
		{
			// Rows appended after the last partition are not part of the
			// plan; the content digest is what notices them.
			name:    "rows_appended_at_the_end",
			edit:    func(s string) string { return s + "10,juliett\n" },
			changed: []bool{false, false, false},
		},
		{
			name:    "partition_1_shorter",
			edit:    func(s string) string { return strings.Replace(s, "foxtrot", "fox", 1) },
			changed: []bool{false, true, true},
		},
	} {
		for _, comp := range []string{"", ".gz", ".zst"} {
			t.Run(tc.name+comp, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "s.csv"+comp)
				writeCompressed(t, path, []byte(orig))
				f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 3})
				if len(plan.Partitions) != 3 {
					t.Fatalf("%d partitions", len(plan.Partitions))
				}
				edited := tc.edit(orig)
				if edited == orig {
					t.Fatal("bad test: the edit changes nothing")
				}
				if strings.HasPrefix(tc.name, "byte") && len(edited) != len(orig) {
					t.Fatal("bad test: the edit changes the length")
				}
				writeCompressed(t, path, []byte(edited))
				for k, p := range plan.Partitions {
					rows, ords, _, err := readPart(f, plan, p, 100)
					if tc.changed[k] {
						if !errors.Is(err, ErrSourceChanged) {
							t.Fatalf("partition %d: got %v (rows %q), want ErrSourceChanged", k, err, rows)
						}
						var pe *ParseError
						if !errors.As(err, &pe) || pe.Path != path {
							t.Fatalf("partition %d: %v is not a *ParseError naming the file", k, err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("partition %d: %v", k, err)
					}
					if !reflect.DeepEqual(ords, seq(p.First, p.Rows)) {
						t.Fatalf("partition %d: ordinals %v", k, ords)
					}
				}
			})
		}
	}
}

func TestTSV(t *testing.T) {
	const data = "a\tb\n\"1\"\t\"he said \"\"hi\"\"\"\n2\tx,y\n3\t\"p\tq\"\n"
	t.Run("quotes_are_characters", func(t *testing.T) {
		path := writeFile(t, "t.tsv", []byte(data))
		f, plan := scanChecked(t, path, Options{}, ScanOptions{KeepRejects: 10})
		if f.Format() != TSV {
			t.Fatalf("format %s", f.Format())
		}
		if got := schemaString(plan.Schema); got != "a:string,b:string" {
			t.Fatalf("schema %s", got)
		}
		// The last row has three fields: 3, "p and q".
		if plan.Rows != 3 || plan.Rejected != 1 || plan.Rejects[0].Ordinal != 3 || plan.Rejects[0].Code != CodeFieldCount {
			t.Fatalf("plan %+v", plan)
		}
		rows, _ := readPlan(t, f, plan, 10)
		want := [][]any{{`"1"`, `"he said ""hi"""`}, {"2", "x,y"}}
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("got %q", rows)
		}
	})
	t.Run("quotes_are_characters_fields", func(t *testing.T) {
		path := writeFile(t, "t.tsv", []byte("a\tb\tc\n3\t\"p\tq\"\n"))
		f, plan := scanChecked(t, path, Options{}, ScanOptions{KeepRejects: 10})
		if plan.Rejected != 0 {
			t.Fatalf("rejects %+v", plan.Rejects)
		}
		rows, _ := readPlan(t, f, plan, 10)
		if want := [][]any{{"3", `"p`, `q"`}}; !reflect.DeepEqual(rows, want) {
			t.Fatalf("got %q", rows)
		}
	})
	t.Run("with_quotes", func(t *testing.T) {
		path := writeFile(t, "t.tsv", []byte(data))
		f, plan := scanChecked(t, path, Options{Quotes: true}, ScanOptions{KeepRejects: 10})
		if got := schemaString(plan.Schema); got != "a:int64,b:string" {
			t.Fatalf("schema %s", got)
		}
		if plan.Rows != 3 || plan.Rejected != 0 {
			t.Fatalf("plan %+v", plan)
		}
		rows, _ := readPlan(t, f, plan, 10)
		want := [][]any{{"1", `he said "hi"`}, {"2", "x,y"}, {"3", "p\tq"}}
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("got %q", rows)
		}
	})
	t.Run("format_option", func(t *testing.T) {
		path := writeFile(t, "t.txt", []byte("a\tb\n1\tx,y\n"))
		if _, err := OpenPath(path, Options{}); !errors.Is(err, input.ErrFormat) {
			t.Fatalf("open without a format: %v", err)
		}
		f, plan := scanChecked(t, path, Options{Format: TSV}, ScanOptions{})
		rows, _ := readPlan(t, f, plan, 10)
		if want := [][]any{{"1", "x,y"}}; !reflect.DeepEqual(rows, want) {
			t.Fatalf("got %q", rows)
		}
	})
	t.Run("tab_extension", func(t *testing.T) {
		path := writeFile(t, "t.tab", []byte("a\tb\n1\t2\n"))
		f, plan := scanChecked(t, path, Options{}, ScanOptions{})
		rows, _ := readPlan(t, f, plan, 10)
		if f.Format() != TSV || !reflect.DeepEqual(rows, [][]any{{"1", "2"}}) {
			t.Fatalf("format %s rows %q", f.Format(), rows)
		}
	})
	t.Run("csv_semicolon", func(t *testing.T) {
		path := writeFile(t, "s.csv", []byte("a;b\n1;x,y\n\"p;q\";\"2\"\"\"\n3;\n"))
		f, plan := scanChecked(t, path, Options{Delimiter: ';'}, ScanOptions{})
		if got := schemaString(plan.Schema); got != "a:string,b:string" {
			t.Fatalf("schema %s", got)
		}
		if plan.Rejected != 0 {
			t.Fatalf("rejects %+v", plan.Rejects)
		}
		rows, _ := readPlan(t, f, plan, 10)
		want := [][]any{{"1", "x,y"}, {"p;q", `2"`}, {"3", nil}}
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("got %q", rows)
		}
	})
	t.Run("csv_comma_not_split_with_semicolon", func(t *testing.T) {
		path := writeFile(t, "s.csv", []byte("a,b\n1,2\n"))
		_, plan := scanChecked(t, path, Options{Delimiter: ';'}, ScanOptions{})
		if got := schemaString(plan.Schema); got != "a,b:string" {
			t.Fatalf("schema %s", got)
		}
	})
}

func TestMaxRowBytes(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("x", 200<<10)
	for _, tc := range []struct {
		name, file, data string
		row              int64
	}{
		{"csv", "m.csv", "a,b\n1,small\n2," + big + "\n3,small\n", 2},
		{"csv_quoted", "m.csv", "a,b\n1,small\n2,\"" + big + "\"\n3,small\n", 2},
		{"csv_first_row", "m.csv", "a,b\n1," + big + "\n", 1},
		{"csv_last_row_no_newline", "m.csv", "a,b\n1,small\n2," + big, 2},
		{"tsv", "m.tsv", "a\tb\n1\tsmall\n2\t" + big + "\n", 2},
		{"jsonl", "m.jsonl", "{\"a\":1}\n{\"a\":\"" + big + "\"}\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, []byte(tc.data))
			f := openChecked(t, path, Options{MaxRowBytes: limit})
			plan, err := f.Scan(context.Background(), ScanOptions{})
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, input.ErrTooLarge) {
				t.Fatalf("got %v, %v; want a *ParseError wrapping ErrTooLarge", plan, err)
			}
			if pe.Row != tc.row || pe.Path != path {
				t.Fatalf("error names row %d of %q, want row %d: %v", pe.Row, pe.Path, tc.row, err)
			}
		})
	}
	t.Run("rows_under_the_limit", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("a,b\n")
		field := strings.Repeat("y", limit-100)
		for i := 1; i <= 40; i++ {
			fmt.Fprintf(&b, "%d,%s\n", i, field)
		}
		path := writeFile(t, "ok.csv", []byte(b.String()))
		f, plan := scanChecked(t, path, Options{MaxRowBytes: limit}, ScanOptions{PartitionRows: 7})
		if plan.Rows != 40 || plan.Rejected != 0 {
			t.Fatalf("plan %+v", plan)
		}
		rows, _ := readPlan(t, f, plan, 5)
		if len(rows) != 40 || rows[39][1] != field {
			t.Fatalf("read %d rows", len(rows))
		}
	})
	t.Run("memory_bounded", func(t *testing.T) {
		// A 32 MiB row is refused after buffering no more than the limit.
		path := writeFile(t, "huge.csv", []byte("a,b\n1,"+strings.Repeat("z", 32<<20)+"\n"))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := OpenPath(path, Options{MaxRowBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Scan(context.Background(), ScanOptions{})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, input.ErrTooLarge) {
			t.Fatalf("got %v, want ErrTooLarge", err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Fatalf("allocated %d bytes to refuse a row over %d bytes", n, limit)
		}
	})
	t.Run("header", func(t *testing.T) {
		path := writeFile(t, "h.csv", []byte("a,"+big+"\n1,2\n"))
		_, err := OpenPath(path, Options{MaxRowBytes: limit})
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, input.ErrTooLarge) {
			t.Fatalf("got %v, want a *ParseError wrapping ErrTooLarge", err)
		}
	})
}

// writeCompressed writes data to path, compressed as its extension says.
func writeCompressed(t *testing.T, path string, data []byte) {
	t.Helper()
	var buf bytes.Buffer
	switch {
	case strings.HasSuffix(path, ".gz"):
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	case strings.HasSuffix(path, ".zst"):
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	default:
		buf.Write(data)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompression(t *testing.T) {
	var csvData, jsonData strings.Builder
	csvData.WriteString("\ufeffid,price,ok,at,note\r\n")
	for i := 1; i <= 3000; i++ {
		note := fmt.Sprintf("note %d", i)
		if i%7 == 0 {
			note = fmt.Sprintf("\"multi\nline, %d\"", i)
		}
		if i%500 == 0 {
			fmt.Fprintf(&csvData, "%d,bad row\r\n", i) // field count
		} else {
			fmt.Fprintf(&csvData, "%d,%d.%02d,%t,2024-01-%02dT10:00:00Z,%s\r\n", i, i, i%100, i%3 == 0, i%28+1, note)
		}
		if i%250 == 0 {
			csvData.WriteString("\r\n")
		}
		if i%500 == 0 {
			fmt.Fprintf(&jsonData, "[%d]\n", i)
		} else {
			fmt.Fprintf(&jsonData, "{\"id\":%d,\"price\":%d.5,\"tags\":[\"t%d\"],\"at\":\"2024-01-02T03:04:05Z\"}\n", i, i, i)
		}
	}
	for _, tc := range []struct {
		name, ext, data string
		schema          string
	}{
		{"csv", ".csv", csvData.String(), "id:int64,price:float64,ok:bool,at:timestamptz,note:string"},
		{"jsonl", ".jsonl", jsonData.String(), "id:int64,price:float64,tags:json,at:timestamptz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plans []*Plan
			var all [][][]any
			// A small MaxRowBytes means a small buffer, refilled every few
			// rows: the plan and rows must not change.
			type variant struct {
				comp   string
				maxRow int
			}
			for _, v := range []variant{{"", 0}, {".gz", 0}, {".zst", 0}, {"", 4 << 10}, {".gz", 4 << 10}} {
				comp := v.comp
				path := filepath.Join(t.TempDir(), "data"+tc.ext+comp)
				writeCompressed(t, path, []byte(tc.data))
				f, plan := scanChecked(t, path, Options{MaxRowBytes: v.maxRow}, ScanOptions{PartitionRows: 250, KeepRejects: 100})
				if want := map[string]Compression{"": None, ".gz": input.Gzip, ".zst": input.Zstd}[comp]; f.Compression() != want {
					t.Fatalf("%s: compression %q", comp, f.Compression())
				}
				if got := schemaString(plan.Schema); got != tc.schema {
					t.Fatalf("%s: schema %s", comp, got)
				}
				if plan.Rows != 3000 || plan.Rejected != 6 || len(plan.Partitions) != 12 {
					t.Fatalf("%s: rows %d rejected %d partitions %d", comp, plan.Rows, plan.Rejected, len(plan.Partitions))
				}
				rows, ords := readPlan(t, f, plan, 100)
				if len(rows) != 2994 || ords[0] != 1 || ords[len(ords)-1] != 2999 {
					t.Fatalf("%s: read %d rows", comp, len(rows))
				}
				plans = append(plans, plan)
				all = append(all, rows)
			}
			for i := 1; i < len(plans); i++ {
				if !reflect.DeepEqual(plans[i], plans[0]) {
					t.Fatalf("plan %d differs:\n%+v\n%+v", i, plans[i], plans[0])
				}
				if !reflect.DeepEqual(all[i], all[0]) {
					t.Fatalf("rows %d differ", i)
				}
			}
			// Offsets and CRCs are those of the decompressed stream.
			for _, p := range plans[0].Partitions {
				if crc := crc32c([]byte(tc.data[p.Offset : p.Offset+p.Length])); crc != p.CRC {
					t.Fatalf("partition %d: crc %08x, want %08x", p.Index, p.CRC, crc)
				}
			}
		})
	}
}

func TestCompressionCorrupt(t *testing.T) {
	// Random text compresses badly, so the compressed file is large and the
	// header is read long before the damage.
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("id,blob\n")
	for i := 1; b.Len() < 4<<20; i++ {
		blob := make([]byte, 64)
		for j := range blob {
			blob[j] = "0123456789abcdef"[rng.IntN(16)]
		}
		fmt.Fprintf(&b, "%d,%s\n", i, blob)
	}
	data := []byte(b.String())
	for _, ext := range []string{".gz", ".zst"} {
		for _, tc := range []struct {
			name   string
			damage func([]byte) []byte
		}{
			{"truncated_half", func(z []byte) []byte { return z[:len(z)/2] }},
			{"truncated_three_quarters", func(z []byte) []byte { return z[:len(z)*3/4] }},
			{"truncated_last_byte", func(z []byte) []byte { return z[:len(z)-1] }},
			{"flipped_byte", func(z []byte) []byte { z[len(z)*3/4] ^= 0x55; return z }},
		} {
			t.Run(ext[1:]+"/"+tc.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "c.csv"+ext)
				writeCompressed(t, path, data)
				z, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tc.damage(z), 0o644); err != nil {
					t.Fatal(err)
				}
				f := openChecked(t, path, Options{})
				plan, err := f.Scan(context.Background(), ScanOptions{})
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("scan: got %v, %v; want a *ParseError", plan, err)
				}
				if pe.Path != path {
					t.Fatalf("error names %q", pe.Path)
				}
			})
		}
		t.Run(ext[1:]+"/header_cut", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.csv"+ext)
			writeCompressed(t, path, data)
			z, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, z[:8], 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = OpenPath(path, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("open: got %v, want a *ParseError", err)
			}
		})
		t.Run(ext[1:]+"/not_compressed", func(t *testing.T) {
			path := writeFile(t, "c.csv"+ext, []byte("a,b\n1,2\n"))
			_, err := OpenPath(path, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("open: got %v, want a *ParseError", err)
			}
		})
	}
}

// TestPartitionVerify checks that a partition reader proves its bytes match
// the plan it is given: a plan that does not describe the file is refused.
func TestPartitionVerify(t *testing.T) {
	data, want, _, _ := genCSV(csvShape{eol: "\n"}, 9)
	path := writeFile(t, "v.csv", data)
	for _, tc := range []struct {
		name   string
		tamper func(*Partition)
	}{
		{"crc", func(p *Partition) { p.CRC ^= 1 }},
		{"length_longer", func(p *Partition) { p.Length++ }},
		{"length_shorter", func(p *Partition) { p.Length-- }},
		{"more_rows", func(p *Partition) { p.Rows++ }},
		{"fewer_rows", func(p *Partition) { p.Rows-- }},
		{"rejected", func(p *Partition) { p.Rejected++ }},
		{"offset", func(p *Partition) { p.Offset++ }},
	} {
		for k := 0; k < 3; k++ {
			t.Run(fmt.Sprintf("%s/partition=%d", tc.name, k), func(t *testing.T) {
				f, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 3})
				p := plan.Partitions[k]
				tc.tamper(&p)
				if _, _, _, err := readPart(f, plan, p, 100); !errors.Is(err, ErrSourceChanged) {
					t.Fatalf("got %v, want ErrSourceChanged", err)
				}
				// The untampered partition still reads.
				rows, _, _, err := readPart(f, plan, plan.Partitions[k], 100)
				if err != nil || !reflect.DeepEqual(rows, want[3*k:3*k+3]) {
					t.Fatalf("got %q, %v", rows, err)
				}
			})
		}
	}
	t.Run("options_reject_more_rows", func(t *testing.T) {
		// A reader whose options reject rows the plan accepted does not
		// silently drop them.
		_, plan := scanChecked(t, path, Options{}, ScanOptions{PartitionRows: 3})
		f := openChecked(t, path, Options{NotNull: []string{"n"}})
		_, _, rejected, err := readPart(f, plan, plan.Partitions[1], 100)
		if !errors.Is(err, ErrSourceChanged) || rejected != 1 {
			t.Fatalf("got %v after %d bad rows, want ErrSourceChanged after 1", err, rejected)
		}
	})
}

// TestRandomCSV compares the reader with encoding/csv on random files whose
// rows straddle buffer refills: small buffers (a small MaxRowBytes) and a
// row larger than the initial buffer.
func TestRandomCSV(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seed    uint64
		rows    int
		maxRow  int
		bigRow  int // length of one extra-long field, 0 for none
		eol     string
		partRow int64
	}{
		{"small_buffer", 1, 2000, 32 << 10, 0, "\n", 37},
		{"small_buffer_crlf", 2, 2000, 32 << 10, 0, "\r\n", 100},
		{"buffer_growth", 3, 300, 0, 3 << 20, "\n", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			alphabet := []string{"a", "b", "z", "0", "9", " ", ",", "\"", "\n", "é", "日", ".", "-"}
			field := func(n int) (raw, value string) {
				var v strings.Builder
				for range n {
					v.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				value = v.String()
				if strings.ContainsAny(value, ",\"\n") || rng.IntN(4) == 0 {
					return `"` + strings.ReplaceAll(value, `"`, `""`) + `"`, value
				}
				return value, value
			}
			var b strings.Builder
			b.WriteString("a,b,c" + tc.eol)
			var want [][]any
			bigAt := rng.IntN(tc.rows)
			for i := range tc.rows {
				var row []any
				for c := range 3 {
					n := rng.IntN(40)
					if rng.IntN(20) == 0 {
						n = rng.IntN(3000)
					}
					if i == bigAt && c == 1 && tc.bigRow > 0 {
						n = tc.bigRow
					}
					raw, value := field(n)
					if c > 0 {
						b.WriteString(",")
					}
					b.WriteString(raw)
					if raw == "" {
						row = append(row, nil)
					} else {
						row = append(row, value)
					}
				}
				b.WriteString(tc.eol)
				want = append(want, row)
			}
			data := b.String()
			// encoding/csv agrees on the values (it cannot tell null from "").
			recs, err := csv.NewReader(strings.NewReader(data)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tc.rows+1 {
				t.Fatalf("encoding/csv reads %d records", len(recs))
			}
			for i, rec := range recs[1:] {
				for c, v := range rec {
					w, _ := want[i][c].(string)
					if tc.eol == "\r\n" {
						// encoding/csv turns CRLF into LF, in quoted fields too.
						w = strings.ReplaceAll(w, "\r\n", "\n")
					}
					if v != w {
						t.Fatalf("bad test: encoding/csv reads row %d column %d as %q, the generator wrote %q", i+1, c, v, w)
					}
				}
			}
			path := writeFile(t, "r.csv", []byte(data))
			types := map[string]idemtype.Type{"a": idemtype.String, "b": idemtype.String, "c": idemtype.String}
			f, plan := scanChecked(t, path, Options{Types: types, MaxRowBytes: tc.maxRow}, ScanOptions{PartitionRows: tc.partRow})
			if plan.Rows != int64(tc.rows) || plan.Rejected != 0 {
				t.Fatalf("rows %d rejected %d: %+v", plan.Rows, plan.Rejected, plan.Rejects)
			}
			got, ords := readPlan(t, f, plan, 64)
			if !reflect.DeepEqual(ords, seq(1, int64(tc.rows))) {
				t.Fatalf("ordinals %v", ords)
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("row %d:\ngot  %q\nwant %q", i+1, got[i], want[i])
				}
			}
			for _, p := range plan.Partitions {
				if crc := crc32c([]byte(data[p.Offset : p.Offset+p.Length])); crc != p.CRC {
					t.Fatalf("partition %d: crc %08x, want %08x", p.Index, p.CRC, crc)
				}
			}
		})
	}
}

func TestScanContextAndProgress(t *testing.T) {
	data, _, _, _ := genCSV(csvShape{eol: "\n", blank: true}, 10)
	path := writeFile(t, "p.csv", data)
	t.Run("cancelled", func(t *testing.T) {
		f := openChecked(t, path, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := f.Scan(ctx, ScanOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
	t.Run("progress", func(t *testing.T) {
		type call struct{ bytes, rows int64 }
		var calls []call
		_, plan := scanChecked(t, path, Options{}, ScanOptions{Progress: func(b, r int64) { calls = append(calls, call{b, r}) }})
		if len(calls) == 0 {
			t.Fatal("progress never called")
		}
		if last := calls[len(calls)-1]; last != (call{int64(len(data)), plan.Rows}) {
			t.Fatalf("last progress %+v, want %d bytes and %d rows", last, len(data), plan.Rows)
		}
	})
	// A compressed file reports compressed bytes consumed, so that a
	// caller measuring against the file's size reaches all of it.
	t.Run("gzip", func(t *testing.T) {
		big, _, _, _ := genCSV(csvShape{eol: "\n"}, 200000)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(big)
		zw.Close()
		path := writeFile(t, "p.csv.gz", gz.Bytes())
		type call struct{ bytes, rows int64 }
		var calls []call
		_, plan := scanChecked(t, path, Options{}, ScanOptions{Progress: func(b, r int64) { calls = append(calls, call{b, r}) }})
		if len(calls) < 2 {
			t.Fatalf("progress called %d times, want several", len(calls))
		}
		for i, c := range calls {
			if c.bytes > int64(gz.Len()) || (i > 0 && (c.bytes < calls[i-1].bytes || c.rows < calls[i-1].rows)) {
				t.Fatalf("progress %d of %d is %+v after %+v: want it to grow up to the file's %d bytes", i, len(calls), c, calls[max(i-1, 0)], gz.Len())
			}
		}
		if last := calls[len(calls)-1]; last != (call{int64(gz.Len()), plan.Rows}) {
			t.Fatalf("last progress %+v, want the file's %d bytes and %d rows", last, gz.Len(), plan.Rows)
		}
	})
}

// closeAfter is a reader that closes ch once n bytes have been read.
type closeAfter struct {
	r  io.Reader
	n  int
	ch chan struct{}
}

func (c *closeAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= n; c.n <= 0 && c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
	return n, err
}

// streamSource is a source whose stream is r, for the one stream a scan
// opens.
type streamSource struct {
	idemtype.Source
	r io.Reader
}

func (s *streamSource) Open(context.Context, int64) (io.ReadCloser, error) {
	return io.NopCloser(s.r), nil
}

// TestSecondCore: the plan is the same whether the rows are validated on
// the reading goroutine, on a second one, or first on one and then on the
// other, for CSV and for JSONL whose columns appear along the way.
func TestSecondCore(t *testing.T) {
	dir := t.TempDir()
	var csvData, jsonData strings.Builder
	csvData.WriteString("id,n,s\n")
	for i := 1; i <= 5000; i++ {
		switch {
		case i%997 == 0:
			fmt.Fprintf(&csvData, "%d,x%d,bad type\n", i, i)
		case i%1499 == 0:
			fmt.Fprintf(&csvData, "%d,too,many,fields\n", i)
		case i%701 == 0:
			fmt.Fprintf(&csvData, "%d,%d,\"bad\xffutf8\"\n", i, i)
		default:
			fmt.Fprintf(&csvData, "%d,%d,\"row, %d\"\n", i, i*3, i)
		}
		switch {
		case i%1201 == 0:
			fmt.Fprintf(&jsonData, "{\"id\": %d, \"new%d\": true}\n", i, i)
		case i%887 == 0:
			fmt.Fprintf(&jsonData, "{\"id\": %d, \"n\": [1,\n", i)
		default:
			fmt.Fprintf(&jsonData, "{\"id\": %d, \"n\": %d, \"s\": \"r\\u00e9 %d\"}\n", i, i*3, i)
		}
	}
	for _, c := range []struct {
		name, data string
		opts       Options
	}{
		{"t.csv", csvData.String(), Options{Types: map[string]idemtype.Type{"n": idemtype.Int64}, NotNull: []string{"id"}}},
		{"t.jsonl", jsonData.String(), Options{NotNull: []string{"id"}}},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		scan := func(second chan struct{}, after int) *Plan {
			t.Helper()
			f, err := OpenPath(path, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			o := ScanOptions{PartitionRows: 100, KeepRejects: 100}
			if second != nil {
				o.secondCore = second
				f.f.In = &streamSource{Source: f.f.In, r: &closeAfter{r: strings.NewReader(c.data), n: after, ch: second}}
			}
			plan, err := f.Scan(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			return plan
		}
		want := scan(nil, 0)
		if want.Rejected < 5 || len(want.Partitions) != 50 {
			t.Fatalf("%s: %d rejects, %d partitions", c.name, want.Rejected, len(want.Partitions))
		}
		for _, after := range []int{0, len(c.data) / 3, len(c.data) * 2} {
			if got := scan(make(chan struct{}), after); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, second core after %d bytes: the plan differs:\n%+v\nwant\n%+v", c.name, after, got, want)
			}
		}
	}
}

// TestNullMarkersInThePlanPass: the plan pass reads a CSV or TSV field
// that is one of Options.Null unquoted as NULL, as the partition reader
// does: an inferred column of numbers and markers is a number, a key
// column's marker is a bad row, and the marker quoted is text.
func TestNullMarkersInThePlanPass(t *testing.T) {
	for _, c := range []struct{ name, data string }{
		{"csv", "id,n,s\n1,NA,a\nNA,2,b\n3,4,\"NA\"\n4,\\N,c\n"},
		{"tsv", "id\tn\ts\n1\tNA\ta\nNA\t2\tb\n3\t4\tNA x\n4\t\\N\tc\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "n."+c.name, []byte(c.data))
			opts := Options{Null: []string{"NA", `\N`}, NotNull: []string{"id"}}
			f, plan := scanChecked(t, path, opts, ScanOptions{KeepRejects: 10})
			if got := schemaString(plan.Schema); got != "id:int64,n:int64,s:string" {
				t.Errorf("schema %s", got)
			}
			var got [][2]any
			for _, r := range plan.Rejects {
				got = append(got, [2]any{r.Ordinal, r.Code})
			}
			if want := [][2]any{{int64(2), value.CodeNull}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("rejects %v, want %v", got, want)
			}
			rows, _, rejected, err := readPart(f, plan, plan.Partitions[0], 10)
			if err != nil || rejected != 1 {
				t.Fatalf("read: %v, %d rejected", err, rejected)
			}
			want := map[string]string{"csv": "[[1 <nil> a] [3 4 NA] [4 <nil> c]]", "tsv": "[[1 <nil> a] [3 4 NA x] [4 <nil> c]]"}[c.name]
			if got := fmt.Sprint(rows); got != want {
				t.Fatalf("rows %s, want %s", got, want)
			}
		})
	}
}
