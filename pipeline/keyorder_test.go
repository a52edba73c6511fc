package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// TestKeyOrderSortsStably hands keyOrder batches whose keys repeat many
// times (an integer key, a text key, and a key of a text and an integer
// column) and checks what it hands on: each group it flushes is the rows
// of the batches it held, sorted by key, rows of one key in the order of
// their ordinals (a stable sort); each row keeps its ordinal and its
// values; the batches keep their lengths; and every batch is released.
func TestKeyOrderSortsStably(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  []string
	}{
		{"integer", []string{"id"}},
		{"text", []string{"code"}},
		{"composite", []string{"code", "id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{1 << 30, 20_000} { // one group; groups of a few batches
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				in, rows := keyedBatches(mem, rand.New(rand.NewPCG(uint64(limit), 7)))
				k := &keyOrder{key: tc.key, limit: limit}
				var groups [][]reader.Batch
				var group []reader.Batch
				send := func(b reader.Batch) error { group = append(group, b); return nil }
				for _, b := range in {
					if err := k.add(b, send); err != nil {
						t.Fatal(err)
					}
					if group != nil {
						groups, group = append(groups, group), nil
					}
				}
				if err := k.flush(send); err != nil {
					t.Fatal(err)
				}
				if group != nil {
					groups = append(groups, group)
				}
				if limit < 1<<30 && len(groups) < 3 {
					t.Fatalf("limit %d: %d groups, want several", limit, len(groups))
				}
				checkKeyOrder(t, tc.key, in, groups, rows)
				for _, g := range groups {
					for _, b := range g {
						b.Release()
					}
				}
				mem.AssertSize(t, 0)
			}
		})
	}
}

// TestKeyOrderInPlace: batches whose keys are in order already are handed
// on as they are, not copied.
func TestKeyOrderInPlace(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var in []reader.Batch
	for b := range int64(3) {
		ib := array.NewInt64Builder(mem)
		ib.AppendValues([]int64{3 * b, 3*b + 1, 3*b + 1}, nil)
		a := ib.NewArray()
		in = append(in, reader.Batch{Record: array.NewRecordBatch(schema, []arrow.Array{a}, 3), Ordinals: []int64{3*b + 1, 3*b + 2, 3*b + 3}})
		a.Release()
		ib.Release()
	}
	var out []reader.Batch
	send := func(b reader.Batch) error { out = append(out, b); return nil }
	k := &keyOrder{key: []string{"id"}, limit: 1 << 30}
	for _, b := range in {
		if err := k.add(b, send); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.flush(send); err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d batches handed on, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i].Record != in[i].Record || !slices.Equal(out[i].Ordinals, in[i].Ordinals) {
			t.Errorf("batch %d: copied, or another", i)
		}
		out[i].Release()
	}
	mem.AssertSize(t, 0)
}

// TestKeyOrderStreamsWhileInOrder: while a partition's rows come in key
// order (rows of one key after each other among them), each batch is
// handed on as it is read, not held to the partition's end; the first
// batch whose rows, after those handed on, break the order is held, it and
// the batches after it sorted at the end. For an integer key (its values
// compared side by side) and a text key, the break at a batch's first row
// (against the last row handed on) and inside a batch.
func TestKeyOrderStreamsWhileInOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		batches [][]string
		streams int
		sorted  []string // the keys of the held batches, as handed on
	}{
		{"integer across batches", [][]string{{"1", "2", "3"}, {"3", "4", "5"}, {"4", "6", "7"}, {"9", "8", "2"}}, 2, []string{"2", "4", "6", "7", "8", "9"}},
		{"integer inside a batch", [][]string{{"1", "2", "2"}, {"3", "5", "4"}, {"6", "7", "8"}}, 1, []string{"3", "4", "5", "6", "7", "8"}},
		{"text across batches", [][]string{{"a", "b", "b"}, {"b", "c", "d"}, {"c", "e", "f"}}, 2, []string{"c", "e", "f"}},
		{"text inside a batch", [][]string{{"a", "c", "b"}, {"d", "e", "f"}}, 0, []string{"a", "b", "c", "d", "e", "f"}},
		// A record batch of no rows (an Arrow IPC stream may hold one).
		{"integer with an empty batch", [][]string{{"1", "2"}, {}, {"3", "4"}}, 3, nil},
		{"text after an empty batch", [][]string{{}, {"a", "b"}, {"a"}}, 2, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			typ, integer := arrow.DataType(arrow.BinaryTypes.String), strings.HasPrefix(tc.name, "integer")
			if integer {
				typ = arrow.PrimitiveTypes.Int64
			}
			schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: typ}}, nil)
			var in []reader.Batch
			ord := int64(0)
			for _, keys := range tc.batches {
				b := array.NewBuilder(mem, typ)
				var ords []int64
				for _, k := range keys {
					if integer {
						n, _ := strconv.ParseInt(k, 10, 64)
						b.(*array.Int64Builder).Append(n)
					} else {
						b.(*array.StringBuilder).Append(k)
					}
					ord++
					ords = append(ords, ord)
				}
				a := b.NewArray()
				in = append(in, reader.Batch{Record: array.NewRecordBatch(schema, []arrow.Array{a}, int64(len(keys))), Ordinals: ords})
				a.Release()
				b.Release()
			}
			var out []reader.Batch
			send := func(b reader.Batch) error { out = append(out, b); return nil }
			k := &keyOrder{key: []string{"k"}, limit: 1 << 30}
			for i, b := range in {
				if err := k.add(b, send); err != nil {
					t.Fatal(err)
				}
				if want := min(i+1, tc.streams); len(out) != want {
					t.Fatalf("after batch %d: %d batches handed on, want %d", i+1, len(out), want)
				}
			}
			if err := k.flush(send); err != nil {
				t.Fatal(err)
			}
			if len(out) != len(in) {
				t.Fatalf("%d batches handed on, want %d", len(out), len(in))
			}
			var keys []string
			for i, b := range out {
				if i < tc.streams {
					if b.Record != in[i].Record {
						t.Errorf("batch %d: not handed on as read", i+1)
					}
				} else {
					for r := range int(b.Record.NumRows()) {
						keys = append(keys, b.Record.Column(0).ValueStr(r))
					}
				}
				b.Release()
			}
			if !slices.Equal(keys, tc.sorted) {
				t.Errorf("held batches handed on as %v, want %v", keys, tc.sorted)
			}
			k.release()
			mem.AssertSize(t, 0)
		})
	}
}

// keyedRow is a row of keyedBatches: its key columns and its value.
type keyedRow struct {
	id   int64
	code string
	v    string
}

// keyedBatches returns 12 batches of 300 rows (id, code, v) whose keys
// take 40 values each, in random order, with ordinals that skip some rows
// (as rejected and superseded rows are skipped), and each row by ordinal.
func keyedBatches(mem memory.Allocator, rng *rand.Rand) ([]reader.Batch, map[int64]keyedRow) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "code", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rows := map[int64]keyedRow{}
	var out []reader.Batch
	ordinal := int64(0)
	for range 12 {
		b := array.NewRecordBuilder(mem, schema)
		var ords []int64
		for range 300 {
			ordinal += 1 + rng.Int64N(2)
			r := keyedRow{id: rng.Int64N(40) - 20, code: "k" + strconv.Itoa(rng.IntN(40)), v: fmt.Sprintf("row %d", ordinal)}
			b.Field(0).(*array.Int64Builder).Append(r.id)
			b.Field(1).(*array.StringBuilder).Append(r.code)
			if ordinal%11 == 0 {
				b.Field(2).(*array.StringBuilder).AppendNull()
				r.v = "NULL"
			} else {
				b.Field(2).(*array.StringBuilder).Append(r.v)
			}
			rows[ordinal] = r
			ords = append(ords, ordinal)
		}
		out = append(out, reader.Batch{Record: b.NewRecordBatch(), Ordinals: ords})
		b.Release()
	}
	return out, rows
}

// checkKeyOrder checks the groups keyOrder handed on for the batches in.
func checkKeyOrder(t *testing.T, key []string, in []reader.Batch, groups [][]reader.Batch, rows map[int64]keyedRow) {
	t.Helper()
	compare := func(x, y keyedRow) int {
		c := 0
		for _, k := range key {
			if c == 0 && k == "id" {
				c = cmp.Compare(x.id, y.id)
			}
			if c == 0 && k == "code" {
				c = strings.Compare(x.code, y.code)
			}
		}
		return c
	}
	next := 0 // the first batch of in the next group holds
	for gi, g := range groups {
		var prev keyedRow
		var prevOrd int64
		var ords []int64
		for bi, b := range g {
			if got, want := b.Record.NumRows(), in[next+bi].Record.NumRows(); got != want || len(b.Ordinals) != int(got) {
				t.Fatalf("group %d batch %d: %d rows, %d ordinals, want %d rows", gi, bi, got, len(b.Ordinals), want)
			}
			id, code, v := b.Record.Column(0).(*array.Int64), b.Record.Column(1).(*array.String), b.Record.Column(2).(*array.String)
			for i, o := range b.Ordinals {
				got := keyedRow{id: id.Value(i), code: code.Value(i), v: "NULL"}
				if v.IsValid(i) {
					got.v = v.Value(i)
				}
				if want, ok := rows[o]; !ok || got != want {
					t.Fatalf("group %d: ordinal %d holds %+v, want %+v", gi, o, got, want)
				}
				if len(ords) > 0 {
					switch c := compare(prev, got); {
					case c > 0:
						t.Fatalf("group %d: %+v (ordinal %d) after %+v (ordinal %d): not in key order", gi, got, o, prev, prevOrd)
					case c == 0 && o < prevOrd:
						t.Fatalf("group %d: key %+v: ordinal %d after %d: rows of one key out of file order", gi, got, o, prevOrd)
					}
				}
				prev, prevOrd = got, o
				ords = append(ords, o)
			}
		}
		var want []int64
		for _, b := range in[next : next+len(g)] {
			want = append(want, b.Ordinals...)
		}
		slices.Sort(ords)
		if !slices.Equal(ords, want) {
			t.Fatalf("group %d: handed on ordinals %v…, want those of batches %d-%d", gi, ords[:min(5, len(ords))], next, next+len(g)-1)
		}
		next += len(g)
	}
	if next != len(in) {
		t.Fatalf("handed on %d batches, want %d", next, len(in))
	}
}

// keyOrdered is a driver whose writers are handed each partition's rows
// in key order or not (sink.Database.KeyOrder), whatever the driver's
// own choice.
type keyOrdered struct {
	sink.Driver
	on bool
}

func (d keyOrdered) Open(ctx context.Context, dsn string, s sink.Settings) (*sink.Database, error) {
	db, err := d.Driver.Open(ctx, dsn, s)
	if db != nil {
		db.KeyOrder = d.on
	}
	return db, err
}

// openKeyOrdered opens f's target through its driver, its writers handed
// each partition's rows in key order (keyOrdered).
func (f *fx) openKeyOrdered(t *testing.T) *Engine {
	t.Helper()
	d, err := Drivers().Lookup(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	return f.open(t, Options{Drivers: sink.Registry{keyOrdered{d, true}}})
}

// keyedFile is a CSV file of keys that repeat up to four times, with other
// values each time, in random order.
type keyedFile struct {
	text  string
	rows  [][]string // the file's rows, by ordinal - 1
	last  map[string]int64
	keyOf func(row []string) string
}

// newKeyedFile makes a file of columns cols whose first nkey are the key
// (cols "region", "id" or "code"), 240 distinct keys.
func newKeyedFile(rng *rand.Rand, cols []string, nkey int) *keyedFile {
	f := &keyedFile{last: map[string]int64{}}
	f.keyOf = func(row []string) string { return strings.Join(row[:nkey], "|") }
	var rows [][]string
	for k := range 240 {
		for occ := range 1 + rng.IntN(4) {
			var row []string
			for _, c := range cols[:nkey] {
				switch c {
				case "region":
					row = append(row, []string{"north", "south", "east"}[k%3])
				case "id":
					row = append(row, strconv.Itoa(k*37%1000-300))
				case "code":
					row = append(row, fmt.Sprintf("c%03d", k*37%1000))
				}
			}
			row = append(row, fmt.Sprintf("v%d.%d", k, occ), strconv.Itoa(rng.IntN(1000)))
			rows = append(rows, row)
		}
	}
	rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	var sb strings.Builder
	sb.WriteString(strings.Join(cols, ",") + "\n")
	for i, r := range rows {
		sb.WriteString(strings.Join(r, ",") + "\n")
		f.last[f.keyOf(r)] = int64(i + 1)
	}
	f.text, f.rows = sb.String(), rows
	return f
}

// TestKeyOrderKeepsTheLastValue imports, in key order on SQLite and on
// PostgreSQL (keyOrdered, as their drivers ask), files whose
// keys (an integer, a text, and a text and an integer) repeat up to four
// times in a partition with other values, in random order, partitions of
// several batches: the table holds, value by
// value, the file's last row of each key, whose row number its lineage
// names; within each partition the rows were written in key order (the
// order a text key's rows took their rowids on SQLite, the heap's order on
// PostgreSQL, as the writer wrote them). An ordinal import of the same
// file writes its rows in the file's order.
func TestKeyOrderKeepsTheLastValue(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		e := f.openKeyOrdered(t)
		const partRows = 60
		for i, tc := range []struct {
			name string
			cols []string
			nkey int
		}{
			{"integer", []string{"id", "v", "n"}, 1},
			{"text", []string{"code", "v", "n"}, 1},
			{"composite", []string{"region", "id", "v", "n"}, 2},
		} {
			kf := newKeyedFile(rand.New(rand.NewPCG(uint64(i), 11)), tc.cols, tc.nkey)
			table := "last_" + tc.name
			req := Request{Path: f.write(t, table+".csv", kf.text), PartitionRows: partRows, BatchRows: 7,
				Mapping: Mapping{Table: table, Key: tc.cols[:tc.nkey]}}
			res := e.Import(context.Background(), req)
			if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != int64(len(kf.last)) || res.Rows.Superseded != int64(len(kf.rows)-len(kf.last)) {
				t.Fatalf("%s: %s %+v %v", tc.name, res.Outcome, res.Rows, res.Err)
			}
			physical := "rowid"
			if f.tg.IsPostgres() {
				physical = "ctid"
			}
			sel := `SELECT ` + strings.Join(texts(f.tg, tc.cols), ", ") + `, ` + f.tg.Text(sink.RowColumn) + ` FROM ` + table + ` ORDER BY ` + physical
			got := f.rows(t, sel)
			if len(got) != len(kf.last) {
				t.Fatalf("%s: %d rows, want %d", tc.name, len(got), len(kf.last))
			}
			written := map[int][]string{} // partition → its keys in the order written
			for _, r := range got {
				row := make([]string, len(tc.cols))
				for c := range row {
					row[c] = fmt.Sprint(r[c])
				}
				ord, _ := strconv.ParseInt(fmt.Sprint(r[len(tc.cols)]), 10, 64)
				key := kf.keyOf(row)
				if last := kf.last[key]; ord != last || !slices.Equal(row, kf.rows[last-1]) {
					t.Fatalf("%s: key %s holds %q (row %d), want the file's last row %d %q", tc.name, key, row, ord, last, kf.rows[max(last, 1)-1])
				}
				p := int((ord - 1) / partRows)
				written[p] = append(written[p], key)
			}
			if tc.name == "integer" && !f.tg.IsPostgres() {
				continue // the rowid is the key
			}
			for p, keys := range written {
				if !slices.IsSortedFunc(keys, kf.compare(tc.cols, tc.nkey)) {
					t.Fatalf("%s: partition %d written in the order %q, not the key's", tc.name, p, keys)
				}
			}
		}

		// Ordinal mode: the file's order, whatever the key order asked.
		kf := newKeyedFile(rand.New(rand.NewPCG(5, 11)), []string{"code", "v", "n"}, 1)
		req := Request{Path: f.write(t, "ordinal.csv", kf.text), PartitionRows: partRows, BatchRows: 7, Mapping: Mapping{Table: "ordinal"}}
		wantImported(t, e.Import(context.Background(), req), int64(len(kf.rows)))
		var ords []int64
		for _, r := range f.rows(t, `SELECT `+f.tg.Text(sink.RowColumn)+`, code, v FROM ordinal ORDER BY `+map[bool]string{false: "rowid", true: "ctid"}[f.tg.IsPostgres()]) {
			ord, _ := strconv.ParseInt(fmt.Sprint(r[0]), 10, 64)
			if row := kf.rows[ord-1]; r[1] != row[0] || r[2] != row[1] {
				t.Fatalf("ordinal: row %d holds %q, want %q", ord, r[1:], row[:2])
			}
			ords = append(ords, ord)
		}
		if len(ords) != len(kf.rows) || !slices.IsSorted(ords) {
			t.Fatalf("ordinal: rows written in the order %v, want the file's", ords)
		}
	})
}

// compare compares two keys of f's rows (keyOf) as keyOrder orders them:
// integers as integers, text by its bytes.
func (f *keyedFile) compare(cols []string, nkey int) func(x, y string) int {
	return func(x, y string) int {
		xs, ys := strings.Split(x, "|"), strings.Split(y, "|")
		for i, c := range cols[:nkey] {
			if c == "id" {
				xi, _ := strconv.ParseInt(xs[i], 10, 64)
				yi, _ := strconv.ParseInt(ys[i], 10, 64)
				if r := cmp.Compare(xi, yi); r != 0 {
					return r
				}
				continue
			}
			if r := strings.Compare(xs[i], ys[i]); r != 0 {
				return r
			}
		}
		return 0
	}
}

// texts returns cols, each as the target's text.
func texts(tg *testkit.Target, cols []string) []string {
	var out []string
	for _, c := range cols {
		out = append(out, tg.Text(c))
	}
	return out
}

// TestKeyOrderRejectsNameTheFileRows imports in key order, on SQLite and
// on PostgreSQL (keyOrdered), a file of shuffled keys into a table whose
// CHECK refuses some rows at apply time: over --max-rejects the error
// names the refused rows by their row numbers in the file, in the file's
// order; within it they are quarantined under those numbers with their
// own values, and the rest land.
func TestKeyOrderRejectsNameTheFileRows(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		e := f.openKeyOrdered(t)
		f.exec(t, `CREATE TABLE checked (code text PRIMARY KEY, v text, n bigint CHECK (n >= 0), _idemport_file bigint, _idemport_row bigint)`)
		rng := rand.New(rand.NewPCG(3, 3))
		keys := rng.Perm(200)
		var sb strings.Builder
		sb.WriteString("code,v,n\n")
		var bad []int64
		var ns []string // each row's n
		want := map[string]string{}
		for i, k := range keys {
			n := rng.IntN(100)
			if i%37 == 5 {
				n = -1 - n
				bad = append(bad, int64(i+1))
			}
			code, v := fmt.Sprintf("c%03d", k), fmt.Sprintf("r%d", i+1)
			ns = append(ns, strconv.Itoa(n))
			fmt.Fprintf(&sb, "%s,%s,%d\n", code, v, n)
			if n >= 0 {
				want[code] = v
			}
		}
		req := Request{Path: f.write(t, "checked.csv", sb.String()), PartitionRows: 100, BatchRows: 16, Mapping: Mapping{Table: "checked", Key: []string{"code"}}}
		res := e.Import(context.Background(), req)
		if res.Err == nil {
			t.Fatalf("over --max-rejects: %s %+v", res.Outcome, res.Rows)
		}
		// --max-rejects 0 stops at the first row refused: the error names
		// it, and its value, by its row of the file.
		named := regexp.MustCompile(`row (\d+)(?: column "n" value "(-?\d+)")?`).FindAllStringSubmatch(res.Err.Error(), -1)
		if len(named) == 0 {
			t.Fatalf("the error names no row: %v", res.Err)
		}
		for _, m := range named {
			o, _ := strconv.ParseInt(m[1], 10, 64)
			if !slices.Contains(bad, o) || (m[2] != "" && m[2] != ns[o-1]) {
				t.Fatalf("the error names row %s (value %q), not a refused row of the file %v: %v", m[1], m[2], bad, res.Err)
			}
		}
		req.MaxRejects = RejectLimit{Count: int64(len(bad))}
		res = e.Import(context.Background(), req)
		if res.Err != nil || res.Rows.Inserted != int64(len(want)) || res.Rows.Rejected != int64(len(bad)) {
			t.Fatalf("within --max-rejects: %s %+v %v", res.Outcome, res.Rows, res.Err)
		}
		var got []int64
		for _, r := range f.rows(t, `SELECT ordinal, raw_row FROM `+f.tg.Ledger("rejects")+` WHERE table_name = 'checked' ORDER BY ordinal`) {
			o, _ := strconv.ParseInt(fmt.Sprint(r[0]), 10, 64)
			if raw := fmt.Sprint(r[1]); !strings.Contains(raw, fmt.Sprintf("r%d", o)) {
				t.Fatalf("reject of row %d holds %s, another row's", o, raw)
			}
			got = append(got, o)
		}
		if !slices.Equal(got, bad) {
			t.Fatalf("quarantined rows %v, want %v", got, bad)
		}
		stored := map[string]string{}
		for _, r := range f.rows(t, `SELECT code, v, `+f.tg.Text(sink.RowColumn)+` FROM checked`) {
			if fmt.Sprint(r[2]) != strings.TrimPrefix(fmt.Sprint(r[1]), "r") {
				t.Fatalf("row %v: lineage names another row", r)
			}
			stored[fmt.Sprint(r[0])] = fmt.Sprint(r[1])
		}
		if len(stored) != len(want) {
			t.Fatalf("stored %d rows, want %d", len(stored), len(want))
		}
		for k, v := range want {
			if stored[k] != v {
				t.Fatalf("key %s holds %q, want %q", k, stored[k], v)
			}
		}
	})
}

// TestKeyOrderDelta imports, through the drivers as they are (every one
// asks for key order), a file of shuffled integer keys and then a delta
// of it in random order: keys changed, unchanged, new between the stored
// ones and new past them, in partitions of several batches whose keys,
// sorted, span the stored ones (on PostgreSQL a batch after one that met
// no stored key is tried as one COPY first; on MariaDB a batch that met
// one is staged and merged, and loading straight into the table is tried
// again after a merge that inserted every row). The table holds, value by
// value, each key's last row, its lineage naming that row's file and row
// number; an unchanged row keeps the first file's.
func TestKeyOrderDelta(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		rng := rand.New(rand.NewPCG(7, 7))
		type stored struct {
			v    string
			file int
			row  int64
		}
		want := map[int]stored{}
		write := func(file int, keys []int, value func(k int) string) string {
			var sb strings.Builder
			sb.WriteString("id,v\n")
			for i, k := range keys {
				v := value(k)
				fmt.Fprintf(&sb, "%d,%s\n", k, v)
				if want[k].v != v {
					want[k] = stored{v, file, int64(i + 1)}
				}
			}
			return f.write(t, fmt.Sprintf("delta%d.csv", file), sb.String())
		}
		var first []int
		for k := range 300 {
			first = append(first, 2*k)
		}
		rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
		req := Request{PartitionRows: 60, BatchRows: 7, Mapping: Mapping{Table: "delta", Key: []string{"id"}}}
		req.Path = write(1, first, func(k int) string { return fmt.Sprintf("a%d", k) })
		if res := f.e.Import(context.Background(), req); res.Err != nil || res.Rows.Inserted != 300 {
			t.Fatalf("file 1: %s %+v %v", res.Outcome, res.Rows, res.Err)
		}
		fileKey := map[string]int{}
		for _, r := range f.rows(t, `SELECT DISTINCT `+f.tg.Text(sink.FileColumn)+` FROM delta`) {
			fileKey[fmt.Sprint(r[0])] = 1
		}

		// 150 stored keys, those not a multiple of 3 changed; 100 new keys
		// between the stored ones, 50 past them.
		var delta []int
		var updated int64
		for _, k := range rng.Perm(300)[:150] {
			delta = append(delta, 2*k)
			if 2*k%3 != 0 {
				updated++
			}
		}
		for _, k := range rng.Perm(300)[:100] {
			delta = append(delta, 2*k+1)
		}
		for k := range 50 {
			delta = append(delta, 600+k)
		}
		rng.Shuffle(len(delta), func(i, j int) { delta[i], delta[j] = delta[j], delta[i] })
		req.Path = write(2, delta, func(k int) string {
			if k%2 == 0 && k < 600 && k%3 != 0 {
				return fmt.Sprintf("b%d", k)
			}
			return fmt.Sprintf("a%d", k)
		})
		res := f.e.Import(context.Background(), req)
		if res.Err != nil || res.Rows.Inserted != 150 || res.Rows.Updated != updated || res.Rows.Unchanged != 150-updated {
			t.Fatalf("file 2: %s %+v %v", res.Outcome, res.Rows, res.Err)
		}
		got := f.rows(t, `SELECT `+f.tg.Text("id")+`, v, `+f.tg.Text(sink.FileColumn)+`, `+f.tg.Text(sink.RowColumn)+` FROM delta`)
		if len(got) != len(want) {
			t.Fatalf("%d rows, want %d", len(got), len(want))
		}
		for _, r := range got {
			k, _ := strconv.Atoi(fmt.Sprint(r[0]))
			fk := fmt.Sprint(r[2])
			if _, ok := fileKey[fk]; !ok {
				fileKey[fk] = 2
			}
			row, _ := strconv.ParseInt(fmt.Sprint(r[3]), 10, 64)
			if w := want[k]; fmt.Sprint(r[1]) != w.v || fileKey[fk] != w.file || row != w.row {
				t.Errorf("key %d holds %v (file %d), want %q of file %d row %d", k, r[1:], fileKey[fk], w.v, w.file, w.row)
			}
		}
		if len(fileKey) != 2 {
			t.Errorf("rows of %d files, want 2", len(fileKey))
		}
	})
}

// TestKeyOrderCopiesEveryType sorts batches with a column of each type
// gather copies, nulls among them, some batches slices of larger ones
// (their arrays start past their buffers' first value), by an integer key
// of three kinds: one that spans less than 2^32 (sorted by its bits), one
// that spans more, and one with nulls (both sorted by comparisons). Each
// row handed on holds, column by column, the values of the row of its
// ordinal, in key order, rows of one key in file order.
func TestKeyOrderCopiesEveryType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		key  func(rng *rand.Rand) (int64, bool) // a key, and whether it is null
	}{
		{"narrow", func(rng *rand.Rand) (int64, bool) { return rng.Int64N(1000) - 400, false }},
		{"wide", func(rng *rand.Rand) (int64, bool) {
			return []int64{math.MinInt64, math.MaxInt64, -1 << 40, 1 << 40, 0, 7}[rng.IntN(6)], false
		}},
		{"nulls", func(rng *rand.Rand) (int64, bool) { return rng.Int64N(50), rng.IntN(9) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			rng := rand.New(rand.NewPCG(3, 9))
			ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
				{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
				{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
				{Name: "t", Type: ts, Nullable: true},
			}, nil)
			type row struct {
				key  int64
				null bool
				vals []string
			}
			rows := map[int64]row{}
			var in []reader.Batch
			ordinal := int64(0)
			for bi := range 6 {
				b := array.NewRecordBuilder(mem, schema)
				var ords []int64
				for i := range 50 {
					null := func() bool { return rng.IntN(5) == 0 }
					k, kn := tc.key(rng)
					if kn {
						b.Field(0).AppendNull()
					} else {
						b.Field(0).(*array.Int64Builder).Append(k)
					}
					if null() {
						b.Field(1).AppendNull()
					} else {
						b.Field(1).(*array.Float64Builder).Append(rng.NormFloat64())
					}
					if null() {
						b.Field(2).AppendNull()
					} else {
						b.Field(2).(*array.StringBuilder).Append(strings.Repeat("x", rng.IntN(4)) + strconv.Itoa(i))
					}
					if null() {
						b.Field(3).AppendNull()
					} else {
						b.Field(3).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
					}
					if null() {
						b.Field(4).AppendNull()
					} else {
						b.Field(4).(*array.Date32Builder).Append(arrow.Date32(rng.Int32N(40000)))
					}
					if null() {
						b.Field(5).AppendNull()
					} else {
						b.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64()))
					}
				}
				rec := b.NewRecordBatch()
				b.Release()
				if bi%2 == 1 { // a slice: the batch's arrays start at an offset
					s := rec.NewSlice(7, 43)
					rec.Release()
					rec = s
				}
				for r := range int(rec.NumRows()) {
					ordinal += 1 + rng.Int64N(2)
					var vals []string
					for c := range int(rec.NumCols()) {
						vals = append(vals, rec.Column(c).ValueStr(r))
					}
					k := rec.Column(0).(*array.Int64)
					rows[ordinal] = row{key: k.Value(r), null: k.IsNull(r), vals: vals}
					ords = append(ords, ordinal)
				}
				in = append(in, reader.Batch{Record: rec, Ordinals: ords})
			}
			var out []reader.Batch
			send := func(b reader.Batch) error { out = append(out, b); return nil }
			k := &keyOrder{key: []string{"k"}, limit: 1 << 30}
			for _, b := range in {
				if err := k.add(b, send); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.flush(send); err != nil {
				t.Fatal(err)
			}
			var prev *row
			var prevOrd int64
			seen := 0
			for bi, b := range out {
				if b.Record.NumRows() != in[bi].Record.NumRows() {
					t.Fatalf("batch %d: %d rows, want %d", bi, b.Record.NumRows(), in[bi].Record.NumRows())
				}
				for r, o := range b.Ordinals {
					want, ok := rows[o]
					if !ok {
						t.Fatalf("ordinal %d handed on, not read", o)
					}
					for c := range int(b.Record.NumCols()) {
						if got := b.Record.Column(c).ValueStr(r); got != want.vals[c] {
							t.Fatalf("ordinal %d, column %s: %q, want %q", o, schema.Field(c).Name, got, want.vals[c])
						}
					}
					if prev != nil {
						c := cmp.Compare(prev.key, want.key)
						switch {
						case prev.null != want.null:
							c = -1 // nulls first
							if want.null {
								c = 1
							}
						case prev.null:
							c = 0
						}
						if c > 0 || c == 0 && o < prevOrd {
							t.Fatalf("ordinal %d (%v) after ordinal %d (%v): not in key order, or rows of one key out of file order", o, want.vals[0], prevOrd, prev.vals[0])
						}
					}
					prev, prevOrd = &want, o
					seen++
				}
				b.Release()
			}
			if seen != len(rows) {
				t.Fatalf("%d rows handed on, want %d", seen, len(rows))
			}
			mem.AssertSize(t, 0)
		})
	}
}
