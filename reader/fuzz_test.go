package reader

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/charset"
	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/reject"
	"github.com/idemport/idemport/reader/internal/value"
	"github.com/idemport/idemport/reader/text"
)

// The fuzz targets. Run one with, for example,
//
//	go test ./reader -run='^$' -fuzz='^FuzzCSV$' -fuzztime=60s -fuzzminimizetime=2s
//
// (Keep minimization short: by default each new interesting input is
// minimized for up to a minute, which can take a whole short run.)
//
// Their seed corpus lives at the repository's top level, in
// testdata/fuzz/<target>/ (see testdata/fuzz/README.md), and is added with
// f.Add, so a plain go test runs every seed as a test.

// fuzzMaxRow is the row size limit in the fuzz targets: no input can make a
// worker buffer more than this. A knob picks a far smaller limit, so that
// buffer refills and ErrTooLarge are exercised too.
const fuzzMaxRow = 64 << 10

// seedRoot is the seed corpus, relative to this package.
const seedRoot = "../testdata/fuzz"

// corpusHeader starts a file in Go's own corpus format.
const corpusHeader = "go test fuzz v1\n"

// addSeeds adds the seed corpus in seedRoot/<dir>. A file in Go's corpus
// format (as go test -fuzz writes crashers) gives every argument of the
// target and is added when native is set (the directory is the target's
// own); any other file is one input, added once for each argument list
// variants returns for it.
func addSeeds(f *testing.F, dir string, native bool, variants func(name string, data []byte) [][]any) {
	f.Helper()
	entries, err := os.ReadDir(filepath.Join(seedRoot, dir))
	if err != nil {
		f.Fatalf("seed corpus: %v", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(seedRoot, dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if bytes.HasPrefix(data, []byte(corpusHeader)) {
			if !native {
				continue
			}
			vals, err := parseCorpusFile(data)
			if err != nil {
				f.Fatalf("%s: %v", path, err)
			}
			f.Add(vals...)
			n++
			continue
		}
		for _, v := range variants(e.Name(), data) {
			f.Add(v...)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no seeds in %s", filepath.Join(seedRoot, dir))
	}
}

// parseCorpusFile decodes a file in Go's fuzz corpus format: a version line,
// then one Go conversion expression per argument, such as []byte("a,b\n"),
// byte('\x03'), uint16(7) or bool(true).
func parseCorpusFile(data []byte) ([]any, error) {
	var vals []any
	for _, line := range strings.Split(string(data[len(corpusHeader):]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		expr, err := parser.ParseExpr(line)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		call, ok := expr.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return nil, fmt.Errorf("%q: not a conversion", line)
		}
		typ := ""
		switch fn := call.Fun.(type) {
		case *ast.Ident:
			typ = fn.Name
		case *ast.ArrayType:
			if elt, ok := fn.Elt.(*ast.Ident); ok && fn.Len == nil && elt.Name == "byte" {
				typ = "[]byte"
			}
		}
		var lit string
		switch a := call.Args[0].(type) {
		case *ast.BasicLit:
			lit = a.Value
		case *ast.Ident:
			lit = a.Name
		default:
			return nil, fmt.Errorf("%q: not a literal", line)
		}
		switch typ {
		case "[]byte", "string":
			s, err := strconv.Unquote(lit)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			if typ == "string" {
				vals = append(vals, s)
			} else {
				vals = append(vals, []byte(s))
			}
		case "byte", "uint8":
			if strings.HasPrefix(lit, "'") {
				r, _, _, err := strconv.UnquoteChar(lit[1:len(lit)-1], '\'')
				if err != nil || r > 255 {
					return nil, fmt.Errorf("%q: bad byte", line)
				}
				vals = append(vals, byte(r))
				break
			}
			n, err := strconv.ParseUint(lit, 0, 8)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			vals = append(vals, byte(n))
		case "uint16":
			n, err := strconv.ParseUint(lit, 0, 16)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			vals = append(vals, uint16(n))
		case "bool":
			b, err := strconv.ParseBool(lit)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			vals = append(vals, b)
		default:
			return nil, fmt.Errorf("%q: unsupported type", line)
		}
	}
	return vals, nil
}

// smallRow maps a knob to a small MaxRowBytes, from 16 bytes up.
func smallRow(k byte) int { return 16 + 61*int(k) }

// fuzzFile writes data to the file called name in dir, replacing it. The
// targets reuse one directory (creating one per input costs more than the
// rest of the work) and run one input at a time in a process.
func fuzzFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var bom = []byte("\xef\xbb\xbf")

// fuzzResult is what reading one file found.
type fuzzResult struct {
	openErr error
	scanErr error
	header  []string
	plan    *Plan
	rows    map[int64][]any // the good rows, rendered, by ordinal
	bad     map[int64]bool  // the ordinals of the bad rows
}

// err is the error that stopped the reading, if any.
func (r fuzzResult) err() error {
	if r.openErr != nil {
		return r.openErr
	}
	return r.scanErr
}

var rejectCodes = []string{value.CodeType, CodeFieldCount, value.CodeQuote, CodeUTF8, value.CodeNUL, CodeJSON, value.CodeNull, CodeInexact, value.CodeRange}

// checkFile opens path (whose decompressed bytes are data) with opts, plans
// it in partitions of partRows, and reads every partition on its own, last
// first, through a fresh File and a plan that went through JSON as stored
// plans do. It fails t unless:
//
//   - Open and Scan either succeed or return a *ParseError naming the file
//     and wrapping a documented cause, with a row and offset where they apply;
//   - the partitions tile the rows and the bytes: contiguous ordinals, each
//     but the last exactly partRows long, contiguous offsets starting where
//     the data starts and ending where only blank lines follow, CRCs of
//     those bytes;
//   - every bad row is listed once (KeepRejects is unbounded) with a known
//     code, inside its partition's rows and bytes, and each partition counts
//     its own;
//   - each partition yields exactly its rows minus its bad rows, with
//     strictly increasing ordinals in its range, skips exactly
//     Partition.Rejected rows, keeps returning io.EOF at the end, and never
//     yields text that is not UTF-8 or a json value that is not JSON;
//   - all Arrow memory is released.
func checkFile(t *testing.T, path string, data []byte, opts Options, partRows int64, batch int) fuzzResult {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Allocator = mem
	if opts.MaxRowBytes == 0 {
		opts.MaxRowBytes = fuzzMaxRow
	}
	var res fuzzResult
	f, err := OpenPath(path, opts)
	if err != nil {
		res.openErr = err
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("open: %v (%T), want a *ParseError", err, err)
		}
		if pe.Path != path || pe.Row != 0 || pe.Offset < 0 || !strings.HasPrefix(err.Error(), path+" ") {
			t.Fatalf("open: %v: want the file named, no row and an offset (%+v)", err, pe)
		}
		if !errors.Is(err, input.ErrEmpty) && !errors.Is(err, input.ErrHeader) && !errors.Is(err, input.ErrTooLarge) {
			t.Fatalf("open: %v: not ErrEmpty, ErrHeader or ErrTooLarge", err)
		}
		if opts.Format == JSONL {
			t.Fatalf("open of JSONL failed: %v", err)
		}
		return res
	}
	res.header = f.Header()
	plan, err := f.Scan(context.Background(), ScanOptions{PartitionRows: partRows, KeepRejects: math.MaxInt})
	if err != nil {
		res.scanErr = err
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("scan: %v (%T), want a *ParseError", err, err)
		}
		if pe.Path != path || pe.Row < 1 || pe.Offset < 0 || pe.Offset > int64(len(data)) {
			t.Fatalf("scan: %v: want the file, a row and an offset named (%+v)", err, pe)
		}
		if !errors.Is(err, input.ErrTooLarge) && !errors.Is(err, text.ErrTooManyKeys) {
			t.Fatalf("scan: %v: not ErrTooLarge or too many keys", err)
		}
		return res
	}
	res.plan = plan
	checkPlanShape(t, f, data, plan, partRows)

	// Read it back as a later run would: a fresh File, the stored plan.
	stored, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	var again Plan
	if err := json.Unmarshal(stored, &again); err != nil {
		t.Fatalf("stored plan %s: %v", stored, err)
	}
	want := *plan
	want.Rejects = nil
	if !reflect.DeepEqual(&again, &want) {
		t.Fatalf("plan changed through JSON:\n%+v\n%+v", again, want)
	}
	f2, err := OpenPath(path, opts)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	res.rows = map[int64][]any{}
	res.bad = map[int64]bool{}
	for _, r := range plan.Rejects {
		res.bad[r.Ordinal] = true
	}
	for k := len(again.Partitions) - 1; k >= 0; k-- {
		readFuzzPartition(t, f2, &again, again.Partitions[k], batch, res)
	}
	if got, want := int64(len(res.rows)), plan.Rows-plan.Rejected; got != want {
		t.Fatalf("read %d good rows, the plan has %d rows and %d bad", got, plan.Rows, plan.Rejected)
	}
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes of Arrow memory not released", n)
	}
	return res
}

// utf8Text returns the UTF-8 text the scanners read from data, which starts
// with a UTF-16 byte order mark.
func utf8Text(t *testing.T, data []byte) []byte {
	t.Helper()
	cs, err := charset.Sniff(data, "")
	if err != nil || cs == nil {
		t.Fatalf("charset of a file starting % x: %v, %v", data[:2], cs, err)
	}
	r, err := cs.Reader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// checkPlanShape checks a plan against the bytes it describes.
func checkPlanShape(t *testing.T, f *File, data []byte, plan *Plan, partRows int64) {
	t.Helper()
	if bytes.HasPrefix(data, []byte("\xff\xfe")) || bytes.HasPrefix(data, []byte("\xfe\xff")) {
		// A UTF-16 byte order mark makes the file UTF-16 (charset.Sniff),
		// and a plan's offsets, lengths and CRCs are of the UTF-8 text the
		// scanners read, without the mark.
		data = utf8Text(t, data)
	}
	if plan.Rows < 0 || plan.Rejected < 0 || plan.Rejected > plan.Rows {
		t.Fatalf("rows %d rejected %d", plan.Rows, plan.Rejected)
	}
	names := map[string]bool{}
	for _, c := range plan.Schema {
		if c.Name == "" || names[c.Name] || c.Type == idemtype.Unknown || c.Type > idemtype.Decimal {
			t.Fatalf("schema %+v", plan.Schema)
		}
		if code, msg := value.CheckText([]byte(c.Name)); code != "" {
			t.Fatalf("column name %q: %s", c.Name, msg)
		}
		names[c.Name] = true
	}
	if f.f.Format != JSONL && !slices.Equal(f.Header(), schemaNames(plan.Schema)) {
		t.Fatalf("schema %+v, header %q", plan.Schema, f.Header())
	}
	start := f.f.Data
	if f.f.Format == JSONL && bytes.HasPrefix(data, bom) {
		start = 3
	}
	at, next := start, int64(1)
	var rejected int64
	for k, p := range plan.Partitions {
		if p.Index != k || p.First != next || p.Rows < 1 || p.Rows > partRows || (k < len(plan.Partitions)-1 && p.Rows != partRows) {
			t.Fatalf("partition %d: %+v (partitions of %d)", k, p, partRows)
		}
		if p.Offset != at || p.Length < 1 || p.Offset+p.Length > int64(len(data)) {
			t.Fatalf("partition %d: %+v, want offset %d in %d bytes", k, p, at, len(data))
		}
		if crc := crc32c(data[p.Offset : p.Offset+p.Length]); crc != p.CRC {
			t.Fatalf("partition %d: crc %08x, want %08x", k, p.CRC, crc)
		}
		if p.Rejected < 0 || p.Rejected > p.Rows {
			t.Fatalf("partition %d: %+v", k, p)
		}
		var n int64
		for _, r := range plan.Rejects {
			if r.Ordinal >= p.First && r.Ordinal < p.First+p.Rows {
				n++
				if r.Offset < p.Offset || r.Offset >= p.Offset+p.Length {
					t.Fatalf("reject %+v lies outside partition %d's bytes %d..%d", r, k, p.Offset, p.Offset+p.Length)
				}
			}
		}
		if n != p.Rejected {
			t.Fatalf("partition %d counts %d bad rows, the rejects list %d", k, p.Rejected, n)
		}
		rejected += p.Rejected
		at, next = p.Offset+p.Length, p.First+p.Rows
	}
	if next-1 != plan.Rows || rejected != plan.Rejected {
		t.Fatalf("partitions hold %d rows and %d bad ones, the plan %d and %d", next-1, rejected, plan.Rows, plan.Rejected)
	}
	// After the last row there may only be blank lines.
	if rest := data[at:]; !onlyLineEnds(rest) {
		t.Fatalf("the plan ends at byte %d, but rows follow: %q", at, trunc(rest))
	}
	if int64(len(plan.Rejects)) != plan.Rejected {
		t.Fatalf("%d rejects listed, %d counted", len(plan.Rejects), plan.Rejected)
	}
	for i, r := range plan.Rejects {
		if r.Ordinal < 1 || r.Ordinal > plan.Rows || (i > 0 && r.Ordinal <= plan.Rejects[i-1].Ordinal) {
			t.Fatalf("reject %d: ordinal %d (rows %d)", i, r.Ordinal, plan.Rows)
		}
		if !slices.Contains(rejectCodes, r.Code) || r.Message == "" || len(r.Value) > reject.MaxValue || (r.Column != "" && !names[r.Column]) {
			t.Fatalf("reject %d: %+v", i, r)
		}
	}
}

// onlyLineEnds reports whether b is a run of LF, CRLF and, at its very end,
// a lone CR: what the scanners skip as blank lines.
func onlyLineEnds(b []byte) bool {
	for len(b) > 0 {
		switch {
		case b[0] == '\n':
			b = b[1:]
		case bytes.HasPrefix(b, []byte("\r\n")):
			b = b[2:]
		case len(b) == 1 && b[0] == '\r':
			b = nil
		default:
			return false
		}
	}
	return true
}

func schemaNames(s Schema) []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.Name
	}
	return out
}

func trunc(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// readFuzzPartition reads partition p on its own and records its rows in res.
func readFuzzPartition(t *testing.T, f *File, plan *Plan, p Partition, batch int, res fuzzResult) {
	t.Helper()
	pr, err := f.Partition(plan, p, batch)
	if err != nil {
		t.Fatalf("partition %d: %v", p.Index, err)
	}
	last, good := p.First-1, int64(0)
	for {
		b, err := pr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			pr.Close()
			t.Fatalf("partition %d (%+v): %v", p.Index, p, err)
		}
		rec := b.Record
		if int(rec.NumCols()) != len(plan.Schema) || int(rec.NumRows()) != len(b.Ordinals) || len(b.Ordinals) == 0 || len(b.Ordinals) > batch {
			t.Fatalf("partition %d: batch of %d rows, %d columns and %d ordinals (batches of %d)", p.Index, rec.NumRows(), rec.NumCols(), len(b.Ordinals), batch)
		}
		for i, o := range b.Ordinals {
			if o <= last || o >= p.First+p.Rows {
				t.Fatalf("partition %d (rows %d..%d): ordinal %d after %d", p.Index, p.First, p.First+p.Rows-1, o, last)
			}
			if res.bad[o] {
				t.Fatalf("partition %d yields row %d, which the plan rejected", p.Index, o)
			}
			last = o
			row := make([]any, len(plan.Schema))
			for c, col := range plan.Schema {
				v := render(rec.Column(c), i)
				row[c] = v
				s, ok := v.(string)
				if !ok || (col.Type != idemtype.String && col.Type != idemtype.JSON) {
					continue
				}
				if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
					t.Fatalf("row %d column %q: %q is not UTF-8 text without NUL", o, col.Name, s)
				}
				if col.Type == idemtype.JSON && !json.Valid([]byte(s)) {
					t.Fatalf("row %d column %q: %q is not JSON", o, col.Name, s)
				}
			}
			res.rows[o] = row
			good++
		}
		b.Release()
	}
	if _, err := pr.Next(); err != io.EOF {
		t.Fatalf("partition %d: Next after EOF: %v", p.Index, err)
	}
	if pr.Rejected() != p.Rejected || good+p.Rejected != p.Rows {
		t.Fatalf("partition %d: %d good rows and %d bad, the plan says %d rows and %d bad", p.Index, good, pr.Rejected(), p.Rows, p.Rejected)
	}
	if err := pr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pr.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// stringTypes fixes every named column to String, so that rows read back
// hold their text as the file has it.
func stringTypes(names []string) map[string]idemtype.Type {
	m := map[string]idemtype.Type{}
	for _, n := range names {
		m[n] = idemtype.String
	}
	return m
}

// ---- CSV and TSV ----

// csvModes are the option sets a plain seed file is tried with in FuzzCSV:
// CSV; TSV without and with quotes; CSV with ';' and TSV with ',' as the
// delimiter; CSV with a 77-byte row limit.
var csvModes = []struct {
	mode, delim byte
}{{0, 0}, {1, 0}, {3, 0}, {4, ';'}, {5, ','}, {8 | 1<<4, 0}}

// FuzzCSV reads arbitrary bytes as a CSV or TSV file. mode picks the
// options: bit 0 TSV, bit 1 quotes on for TSV, bit 2 delim as the
// delimiter, bit 3 a small row limit chosen by the high bits. Besides the
// invariants of checkFile, it compares the rows with encoding/csv (for
// quoted text that encoding/csv accepts) or with a plain split at line ends
// and delimiters (for text without quotes, or with quotes off).
func FuzzCSV(f *testing.F) {
	addSeeds(f, "FuzzCSV", true, func(_ string, data []byte) [][]any {
		var out [][]any
		for _, m := range csvModes {
			out = append(out, []any{data, m.mode, m.delim})
		}
		return out
	})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, mode, delim byte) {
		opts := Options{Format: CSV}
		if mode&1 != 0 {
			opts.Format = TSV
			opts.Quotes = mode&2 != 0
		}
		if mode&4 != 0 {
			opts.Delimiter = delim
		}
		if mode&8 != 0 {
			opts.MaxRowBytes = smallRow(mode >> 4)
		}
		checkCSV(t, dir, data, opts, int64(mode%5)+1)
	})
}

// FuzzTSV reads arbitrary bytes as a TSV file, with quotes off (the
// default) or on.
func FuzzTSV(f *testing.F) {
	addSeeds(f, "FuzzTSV", true, func(_ string, data []byte) [][]any {
		return [][]any{{data, false}, {data, true}}
	})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, quotes bool) {
		checkCSV(t, dir, data, Options{Format: TSV, Quotes: quotes}, 2)
	})
}

// checkCSV reads data as CSV/TSV with opts twice, inferring types and with
// every column a string, checks both readings and compares the second with
// a reference parser where the grammars agree.
func checkCSV(t *testing.T, dir string, data []byte, opts Options, partRows int64) {
	path := fuzzFile(t, dir, "f.txt", data)
	inferred := checkFile(t, path, data, opts, partRows, 3)
	if inferred.err() != nil {
		checkCSVError(t, data, opts, inferred.err())
		return
	}
	o := opts
	o.Types = stringTypes(inferred.header)
	text := checkFile(t, path, data, o, partRows, 2)
	if text.err() != nil {
		t.Fatalf("read with string columns: %v; inferring types it read fine", text.err())
	}
	if text.plan.Rows != inferred.plan.Rows || !reflect.DeepEqual(text.bad, inferred.bad) {
		t.Fatalf("with string columns the bad rows are %v of %d, inferring types %v of %d", text.bad, text.plan.Rows, inferred.bad, inferred.plan.Rows)
	}
	compareCSV(t, data, opts, text)
}

// csvDelim returns the delimiter opts mean.
func csvDelim(opts Options) byte {
	switch {
	case opts.Delimiter != 0:
		return opts.Delimiter
	case opts.Format == TSV:
		return '\t'
	}
	return ','
}

// refRecords parses data the way the reader must, where a reference
// exists: a plain split for text without quotes or with quoting off, and
// encoding/csv for quoted text that it accepts. It returns the records
// (header first), with nil for a field that must be null when that is
// known, and when records are lines, each one's length without its LF: the
// reader needs that many bytes plus one for the row.
func refRecords(t *testing.T, data []byte, opts Options) (recs [][]any, lens []int, ok bool) {
	t.Helper()
	if bytes.HasPrefix(data, []byte("\xff\xfe")) || bytes.HasPrefix(data, []byte("\xfe\xff")) {
		// A UTF-16 byte order mark makes the file UTF-16 whatever the
		// options say (charset.Sniff): the reference reads bytes, not
		// decoded text; testdata/encodings' tests cover such files.
		return nil, nil, false
	}
	data = bytes.TrimPrefix(data, bom)
	delim := csvDelim(opts)
	quoting := opts.Format == CSV || opts.Quotes
	stdDelim := delim < utf8.RuneSelf && delim != '\r' && delim != '\n' && delim != '"' && delim != 0
	if !quoting || !bytes.Contains(data, []byte(`"`)) {
		// Rows end at LF; a CR before it, or before the end, is dropped;
		// empty lines (a lone CR ending the stream too) are skipped; a
		// delimiter splits fields; an empty field is null.
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
				continue
			}
			lens = append(lens, len(line))
			var rec []any
			for _, field := range bytes.Split(bytes.TrimSuffix(line, []byte("\r")), []byte{delim}) {
				if len(field) == 0 {
					rec = append(rec, nil)
				} else {
					rec = append(rec, string(field))
				}
			}
			recs = append(recs, rec)
		}
		if quoting && stdDelim {
			// With no quotes encoding/csv must agree with the split.
			r := csv.NewReader(bytes.NewReader(data))
			r.Comma, r.LazyQuotes, r.FieldsPerRecord = rune(delim), true, -1
			std, err := r.ReadAll()
			if err != nil || len(std) != len(recs) {
				t.Fatalf("bad test: encoding/csv reads %d records (%v), the split %d", len(std), err, len(recs))
			}
			for i := range std {
				if !reflect.DeepEqual(anyStrings(std[i]), nullToEmpty(recs[i])) {
					t.Fatalf("bad test: record %d: encoding/csv %q, the split %q", i, std[i], recs[i])
				}
			}
		}
		return recs, lens, true
	}
	if !stdDelim {
		return nil, nil, false
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma, r.FieldsPerRecord = rune(delim), -1
	std, err := r.ReadAll()
	if err != nil {
		return nil, nil, false
	}
	for _, rec := range std {
		recs = append(recs, anyStrings(rec))
	}
	return recs, nil, true
}

func anyStrings(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func nullToEmpty(rec []any) []any {
	out := make([]any, len(rec))
	for i, v := range rec {
		if v == nil {
			v = ""
		}
		out[i] = v
	}
	return out
}

// headerProblem says whether the reader must refuse rec as a header.
func headerProblem(rec []any) bool {
	seen := map[string]bool{}
	for _, v := range rec {
		raw, _ := v.(string)
		name := strings.TrimSpace(raw)
		// A line break in a name (lines that end in CR alone, or a quoted
		// name spanning lines) is refused.
		if code, _ := value.CheckText([]byte(raw)); name == "" || code != "" || seen[name] || strings.ContainsAny(raw, "\r\n") {
			return true
		}
		seen[name] = true
	}
	return false
}

// tooLarge returns the index of the first line of lens that does not fit in
// maxRow bytes with its line end, or -1.
func tooLarge(lens []int, maxRow int) int {
	for i, n := range lens {
		if n >= maxRow {
			return i
		}
	}
	return -1
}

// checkCSVError checks that the reference parser agrees that data cannot be
// read, and why.
func checkCSVError(t *testing.T, data []byte, opts Options, err error) {
	t.Helper()
	recs, lens, ok := refRecords(t, data, opts)
	if !ok {
		return
	}
	maxRow := cmpOr(opts.MaxRowBytes, fuzzMaxRow)
	big := -1
	if lens != nil {
		big = tooLarge(lens, maxRow)
	}
	var pe *ParseError
	errors.As(err, &pe)
	switch {
	case errors.Is(err, input.ErrTooLarge):
		if lens == nil && len(data) < maxRow {
			t.Fatalf("%v, but the file has %d bytes", err, len(data))
		}
		if lens != nil && (big < 0 || pe.Row != int64(big)) {
			t.Fatalf("%v; the first record over %d bytes is %d (lengths %v)", err, maxRow, big, lens)
		}
	case big == 0 || (big > 0 && pe.Row > 0):
		t.Fatalf("got %v; record %d does not fit in %d bytes", err, big, maxRow)
	case errors.Is(err, input.ErrEmpty):
		if len(recs) != 0 {
			t.Fatalf("%v, but the reference reads %d records", err, len(recs))
		}
	case errors.Is(err, input.ErrHeader):
		if len(recs) == 0 || !headerProblem(recs[0]) {
			t.Fatalf("%v, but the reference reads the header %q", err, recs[:min(1, len(recs))])
		}
	default:
		t.Fatalf("unexpected error %v", err)
	}
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// compareCSV compares rows read with every column a string with the
// reference parser: same header, same number of rows, a row is bad exactly
// when its field count is wrong or a field is not UTF-8 text without NUL,
// and the good rows hold the reference's values.
func compareCSV(t *testing.T, data []byte, opts Options, res fuzzResult) {
	t.Helper()
	recs, lens, ok := refRecords(t, data, opts)
	if !ok {
		return
	}
	if lens != nil {
		if big := tooLarge(lens, cmpOr(opts.MaxRowBytes, fuzzMaxRow)); big >= 0 {
			t.Fatalf("record %d of %d bytes fits in the limit of %d (lengths %v)", big, lens[big], cmpOr(opts.MaxRowBytes, fuzzMaxRow), lens)
		}
	}
	if len(recs) == 0 || headerProblem(recs[0]) {
		t.Fatalf("read header %q; the reference reads %q", res.header, recs)
	}
	var want []string
	for _, v := range recs[0] {
		s, _ := v.(string)
		want = append(want, strings.TrimSpace(s))
	}
	header := res.header
	if lens == nil { // encoding/csv turns CRLF in quoted fields into LF
		header = nil
		for _, h := range res.header {
			header = append(header, strings.ReplaceAll(h, "\r\n", "\n"))
		}
	}
	if !slices.Equal(header, want) {
		t.Fatalf("header %q, the reference %q", res.header, want)
	}
	if res.plan.Rows != int64(len(recs)-1) {
		t.Fatalf("%d rows, the reference %d: %q", res.plan.Rows, len(recs)-1, recs)
	}
	nullKnown := lens != nil
	for i, rec := range recs[1:] {
		ord := int64(i + 1)
		bad := len(rec) != len(want)
		for _, v := range rec {
			s, _ := v.(string)
			if code, _ := value.CheckText([]byte(s)); code != "" {
				bad = true
			}
		}
		got, read := res.rows[ord]
		if bad {
			if read {
				t.Fatalf("row %d %q was read as %q; it is bad", ord, rec, got)
			}
			continue
		}
		if !read {
			t.Fatalf("row %d %q was rejected", ord, rec)
		}
		if !nullKnown {
			// encoding/csv cannot tell null from "", and turns CRLF in
			// quoted fields into LF.
			got = nullToEmpty(got)
			for c, v := range got {
				got[c] = strings.ReplaceAll(v.(string), "\r\n", "\n")
			}
		}
		if !reflect.DeepEqual(got, rec) {
			t.Fatalf("row %d: got %q, the reference %q", ord, got, rec)
		}
	}
}

// ---- JSONL ----

// FuzzJSONL reads arbitrary bytes as a JSONL file. knobs bit 0 picks a
// small row limit (bits 1-3 say how small); bits 4-7 the partition size.
// Besides the invariants of checkFile, it checks each line against
// encoding/json: a good line is a JSON object (allowing for the reader's
// leniency, see lenientJSON) whose values, read with every column a string,
// are those encoding/json decodes; a plain line (printable ASCII, no
// escapes, shallow) that is a JSON object without an empty key is good.
func FuzzJSONL(f *testing.F) {
	addSeeds(f, "FuzzJSONL", true, func(_ string, data []byte) [][]any {
		return [][]any{{data, byte(0x10)}, {data, byte(0x31)}}
	})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, knobs byte) {
		opts := Options{Format: JSONL}
		if knobs&1 != 0 {
			opts.MaxRowBytes = smallRow(knobs >> 1 & 7)
		}
		partRows := int64(knobs>>4) + 1
		path := fuzzFile(t, dir, "f.txt", data)
		inferred := checkFile(t, path, data, opts, partRows, 3)
		lines := jsonlLines(data)
		maxRow := cmpOr(opts.MaxRowBytes, fuzzMaxRow)
		big := -1
		for i, l := range lines {
			if l.raw >= maxRow {
				big = i
				break
			}
		}
		if err := inferred.err(); err != nil {
			var pe *ParseError
			errors.As(err, &pe)
			if errors.Is(err, input.ErrTooLarge) && (big < 0 || pe.Row != int64(big+1)) {
				t.Fatalf("%v; the first line over %d bytes is row %d", err, maxRow, big+1)
			}
			return
		}
		if big >= 0 {
			t.Fatalf("line %d of %d bytes fits in the limit of %d", big+1, lines[big].raw, maxRow)
		}
		if inferred.plan.Rows != int64(len(lines)) {
			t.Fatalf("%d rows, but %d lines that are not blank", inferred.plan.Rows, len(lines))
		}
		o := opts
		o.Types = stringTypes(schemaNames(inferred.plan.Schema))
		text := checkFile(t, path, data, o, partRows, 2)
		if text.err() != nil {
			t.Fatalf("read with string columns: %v", text.err())
		}
		if !reflect.DeepEqual(text.bad, inferred.bad) {
			t.Fatalf("with string columns the bad rows are %v, inferring types %v", text.bad, inferred.bad)
		}
		for i, l := range lines {
			checkJSONLine(t, int64(i+1), l.text, text.plan.Schema, text.rows)
		}
	})
}

type jsonlLine struct {
	text []byte // without its line end
	raw  int    // its length with its CR but without its LF
}

// jsonlLines splits data into the lines that are rows: not empty, not a
// lone CR.
func jsonlLines(data []byte) []jsonlLine {
	var out []jsonlLine
	for _, line := range bytes.Split(bytes.TrimPrefix(data, bom), []byte("\n")) {
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			continue
		}
		out = append(out, jsonlLine{text: bytes.TrimRight(line, "\r"), raw: len(line)})
	}
	return out
}

// checkJSONLine compares the row read from line (rows[ord], read with every
// column a string) with what encoding/json makes of line.
func checkJSONLine(t *testing.T, ord int64, line []byte, schema Schema, rows map[int64][]any) {
	t.Helper()
	got, read := rows[ord]
	var obj map[string]json.RawMessage
	isObject := json.Valid(line) && json.Unmarshal(line, &obj) == nil && obj != nil
	if read && !isObject {
		fixed := lenientJSON(line)
		isObject = json.Valid(fixed) && json.Unmarshal(fixed, &obj) == nil && obj != nil
	}
	if !read {
		if plainJSON(line) && isObject {
			if _, empty := obj[""]; !empty {
				t.Fatalf("line %d %q was rejected", ord, line)
			}
		}
		return
	}
	if !isObject {
		t.Fatalf("line %d %q is not a JSON object but was read as %q", ord, line, got)
	}
	for c, col := range schema {
		raw, ok := obj[col.Name]
		var want any
		switch {
		case !ok || string(raw) == "null":
		case raw[0] == '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			want = s
		case raw[0] == '{' || raw[0] == '[':
			if !sameJSON(got[c], raw) {
				t.Fatalf("line %d column %q: got %q, encoding/json %s", ord, col.Name, got[c], raw)
			}
			continue
		default:
			want = string(raw)
		}
		if got[c] != want {
			t.Fatalf("line %d %q column %q: got %q, encoding/json %q", ord, line, col.Name, got[c], want)
		}
	}
}

// lenientJSON rewrites what the reader tolerates in strings into JSON that
// means what the reader reads: a raw control character becomes its \u
// escape and a backslash that starts no JSON escape (\q, \u12) stands for
// itself. (In nested values neither is tolerated: they would be json values
// that are not JSON. That is checked by checkFile and by sameJSON.)
func lenientJSON(line []byte) []byte {
	var out []byte
	in := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c < 0x20:
			out = fmt.Appendf(out, "\\u%04x", c)
			continue
		case c == '\\':
			next := byte(0)
			if i+1 < len(line) {
				next = line[i+1]
			}
			switch {
			case strings.IndexByte(`"\\/bfnrt`, next) >= 0 && next != 0:
				out = append(out, c, next)
				i++
				continue
			case next == 'u' && i+5 < len(line) && isHex(line[i+2:i+6]):
				out = append(out, line[i:i+6]...)
				i += 5
				continue
			}
			out = append(out, '\\', '\\')
			continue
		}
		out = append(out, c)
	}
	return out
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}

// plainJSON reports whether line is printable ASCII without escapes and too
// shallow for any depth limit: text every JSON parser reads the same way.
func plainJSON(line []byte) bool {
	depth := 0
	for _, c := range line {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
		if c == '{' || c == '[' {
			depth++
		}
	}
	return depth < 100
}

// sameJSON reports whether got is a JSON text equal in value to want.
func sameJSON(got any, want []byte) bool {
	s, ok := got.(string)
	if !ok {
		return false
	}
	var a, b any
	da := json.NewDecoder(strings.NewReader(s))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(want))
	db.UseNumber()
	return da.Decode(&a) == nil && db.Decode(&b) == nil && reflect.DeepEqual(a, b)
}

// ---- the plan pass ----

var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))

func compressData(t *testing.T, comp Compression, data []byte) []byte {
	switch comp {
	case input.Gzip:
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(data)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	case input.Zstd:
		return zstdEncoder.EncodeAll(data, nil)
	}
	return data
}

// planTypes are the types FuzzPlan fixes columns to, in turn.
var planTypes = []idemtype.Type{idemtype.Bool, idemtype.Int64, idemtype.Float64, idemtype.Timestamp, idemtype.String, idemtype.JSON, idemtype.Decimal}

// FuzzPlan plans arbitrary bytes as CSV, TSV or JSONL (format % 3) in
// partitions of partRows%64+1 rows, read back in batches of
// (partRows>>8)%7+1, and checks the invariants of checkFile, then that the
// plan does not depend on the partition size (rows, bad rows, schema) and
// that a gzip or zstd copy of the file has exactly the same plan. knobs:
// bits 0-1 compression, bit 2 quotes on for TSV, bit 3 a row limit of
// 64 bytes, bit 4 fix the type of every column (in turn from planTypes,
// starting at bits 6-7), bit 5 make the first column a key (not null).
func FuzzPlan(f *testing.F) {
	addSeeds(f, "FuzzPlan", true, func(name string, data []byte) [][]any {
		var format byte
		switch filepath.Ext(name) {
		case ".tsv":
			format = 1
		case ".jsonl":
			format = 2
		}
		return [][]any{
			{data, format, uint16(0), byte(0)},
			{data, format, uint16(1 | 2<<8), byte(1 | 1<<4 | 1<<5)},
			{data, format, uint16(2 | 4<<8), byte(2 | 1<<4 | 2<<6)},
			{data, format, uint16(4), byte(3 | 1<<3 | 1<<4 | 3<<6)},
		}
	})
	// The other targets' seeds, once each.
	for dir, format := range map[string]byte{"FuzzCSV": 0, "FuzzTSV": 1, "FuzzJSONL": 2} {
		addSeeds(f, dir, false, func(_ string, data []byte) [][]any {
			return [][]any{{data, format, uint16(3 | 3<<8), byte(1 | 1<<4 | 1<<5)}}
		})
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, format byte, partRows uint16, knobs byte) {
		opts := Options{Format: []Format{CSV, TSV, JSONL}[format%3]}
		opts.Quotes = knobs&4 != 0
		if knobs&8 != 0 {
			opts.MaxRowBytes = 64
		}
		size := int64(partRows%64) + 1
		batch := int(partRows>>8)%7 + 1
		path := fuzzFile(t, dir, "f.txt", data)
		base := checkFile(t, path, data, opts, size, batch)
		if base.err() != nil {
			return
		}
		if knobs&(1<<4|1<<5) != 0 {
			names := schemaNames(base.plan.Schema)
			if knobs&(1<<4) != 0 {
				opts.Types = map[string]idemtype.Type{}
				for i, n := range names {
					opts.Types[n] = planTypes[(i+int(knobs>>6))%len(planTypes)]
				}
			}
			if knobs&(1<<5) != 0 && len(names) > 0 {
				opts.NotNull = names[:1]
			}
			base = checkFile(t, path, data, opts, size, batch)
			if base.err() != nil {
				t.Fatalf("with fixed types or a key: %v", base.err())
			}
			for name, typ := range opts.Types {
				if i := base.plan.Schema.Index(name); base.plan.Schema[i].Type != typ {
					t.Fatalf("column %q is %s, fixed to %s", name, base.plan.Schema[i].Type, typ)
				}
			}
		}
		// The partition size changes nothing but the partitions.
		one := checkFile(t, path, data, opts, 1, 1)
		if one.err() != nil {
			t.Fatalf("in partitions of one row: %v", one.err())
		}
		if one.plan.Rows != base.plan.Rows || !reflect.DeepEqual(one.plan.Schema, base.plan.Schema) || !reflect.DeepEqual(one.plan.Rejects, base.plan.Rejects) {
			t.Fatalf("partitions of %d and of 1 disagree:\n%+v\n%+v", size, base.plan, one.plan)
		}
		if !reflect.DeepEqual(one.rows, base.rows) {
			t.Fatalf("partitions of %d and of 1 read different rows", size)
		}
		// A compressed copy has the same plan: offsets and CRCs are those
		// of the decompressed stream.
		if comp := []Compression{None, input.Gzip, input.Zstd, None}[knobs&3]; comp != None {
			ext := map[Compression]string{input.Gzip: ".gz", input.Zstd: ".zst"}[comp]
			zpath := fuzzFile(t, dir, "f.txt"+ext, compressData(t, comp, data))
			z := checkFile(t, zpath, data, opts, size, batch)
			if z.err() != nil {
				t.Fatalf("%s copy: %v", comp, z.err())
			}
			if !reflect.DeepEqual(z.plan, base.plan) || !reflect.DeepEqual(z.rows, base.rows) {
				t.Fatalf("%s copy planned differently:\n%+v\n%+v", comp, z.plan, base.plan)
			}
		}
	})
}
