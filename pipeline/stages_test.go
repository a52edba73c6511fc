package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
)

// The stages of an import, in process over a real SQLite file and a real
// PostgreSQL schema: identify (the fingerprint), plan (partitions, bad
// rows, types) and apply (what lands, value by value).

// TestIdentifyFingerprint checks what makes two files one: the same
// content under another name or compressed is the same file (one content
// digest and file ID, the later runs duplicates); changed content is
// another; an unchanged file is not hashed again; a --column naming the
// type the table already has does not change the mapping.
func TestIdentifyFingerprint(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		content := items(50, 1)
		m := Mapping{Table: "items"}
		first := f.e.Import(ctx, Request{Path: f.write(t, "items.csv", content), Mapping: m})
		f.wantOutcome(t, first, Imported)
		if !strings.HasPrefix(first.ContentDigest, "sha256:") || first.FileID != first.ContentDigest || first.QuickCheck {
			t.Fatalf("first import: file ID %q, content digest %q, quick check %v", first.FileID, first.ContentDigest, first.QuickCheck)
		}
		var gz, gz9, zst bytes.Buffer
		for _, c := range []struct {
			buf   *bytes.Buffer
			level int
		}{{&gz, gzip.BestSpeed}, {&gz9, gzip.BestCompression}} {
			w, _ := gzip.NewWriterLevel(c.buf, c.level)
			w.Write([]byte(content))
			w.Close()
		}
		zw, _ := zstd.NewWriter(&zst)
		zw.Write([]byte(content))
		zw.Close()
		copies := []struct{ name, bytes string }{
			{"renamed.csv", content},
			{"items.csv.gz", gz.String()},
			{"items-best.csv.gz", gz9.String()},
			{"items.csv.zst", zst.String()},
		}
		for _, c := range copies {
			res := f.e.Import(ctx, Request{Path: f.write(t, c.name, c.bytes), Mapping: m})
			if res.Outcome != Duplicate || res.FileID != first.FileID || res.ContentDigest != first.ContentDigest || res.MappingDigest != first.MappingDigest {
				t.Errorf("%s: %s, file ID %s content %s mapping %s; want a duplicate of %s", c.name, res.Outcome, res.FileID, res.ContentDigest, res.MappingDigest, first.FileID)
			}
		}
		// Rerun unchanged: the digest comes from the quick check.
		again := f.e.Import(ctx, Request{Path: f.dir + "/items.csv.gz", Mapping: m})
		if again.Outcome != Duplicate || !again.QuickCheck || again.ContentDigest != first.ContentDigest {
			t.Errorf("rerun of an unchanged compressed file: %s, quick check %v, digest %s", again.Outcome, again.QuickCheck, again.ContentDigest)
		}
		// Changed content, same name: another file.
		changed := f.e.Import(ctx, Request{Path: f.write(t, "items.csv", items(50, 2)), Mapping: m})
		if changed.Outcome != Imported || changed.ContentDigest == first.ContentDigest || changed.FileID == first.FileID || changed.QuickCheck {
			t.Errorf("changed content: %s, digest %s (first %s), quick check %v", changed.Outcome, changed.ContentDigest, first.ContentDigest, changed.QuickCheck)
		}
		if n := f.rows(t, `SELECT count(*) FROM items`)[0][0].(int64); n != 100 {
			t.Errorf("items holds %d rows, want 100: each content once", n)
		}
		// The table's own type, forced: the same mapping. Another type:
		// another mapping, and a conflict under the same file ID.
		same := f.e.Import(ctx, Request{Path: f.dir + "/renamed.csv", Mapping: Mapping{Table: "items", Columns: map[string]idemtype.Type{"qty": idemtype.Int64}}})
		if same.Outcome != Duplicate || same.FileID != first.FileID {
			t.Errorf("--column qty:int64 into an int64 column: %s %v, want a duplicate of %s", same.Outcome, same.Err, first.FileID)
		}
		other := f.e.Import(ctx, Request{Path: f.dir + "/renamed.csv", Mapping: Mapping{Table: "items", Columns: map[string]idemtype.Type{"qty": idemtype.String}}})
		if other.Outcome != Conflict || other.MappingDigest == first.MappingDigest || !strings.Contains(fmt.Sprint(other.Err), "mapping differs") {
			t.Errorf("--column qty:string into an int64 column: %s %v", other.Outcome, other.Err)
		}
	})
}

// TestPlanPartitionsRejectsAndTypes checks the plan pass: plan (PlanFile)
// and import cut the file into the same partitions, contiguous and
// covering it; count the same bad rows, which the import quarantines with
// their ordinal, column and value; and infer the types the created
// table's columns then have.
func TestPlanPartitionsRejectsAndTypes(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		content := "id,qty,price,exact,ok,at,zip,note\n" +
			"1,10,1.5,3.14159265358979323846,true,2026-11-28T09:30:00Z,02134,a\n" +
			"2,x,2.25,2.000,false,2026-11-29T10:00:00Z,10001,\"b, c\"\n" +
			"3,30,3,3.1,true,2026-11-30T11:00:00Z,94103,\n" +
			"4,40,4.5,4.25,false,2026-12-01T12:00:00Z,00501,d\n" +
			"5,y,5,5,true,2026-12-02T13:00:00Z,60601,e\n" +
			"6,60,6.75,6.125,true,2026-12-03T14:00:00Z,73301,f\n" +
			"7,70,7,7.0,false,2026-12-04T15:00:00Z,02110,g\n"
		path := f.write(t, "mixed.csv", content)
		req := Request{Path: path, PartitionRows: 3, MaxRejects: RejectLimit{Count: 2},
			Mapping: Mapping{Columns: map[string]idemtype.Type{"qty": idemtype.Int64}}}
		rep, err := PlanFile(ctx, f.e, req)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Decision != "create" || rep.Rows != 7 || rep.Rejected != 2 || rep.Error != "" {
			t.Fatalf("plan: decision %s, %d rows, %d bad, error %q", rep.Decision, rep.Rows, rep.Rejected, rep.Error)
		}
		// Types: inferred, or forced (qty).
		types := map[string]string{}
		for _, c := range rep.Schema {
			types[c.Name] = c.Type.String()
		}
		wantTypes := map[string]string{"id": "int64", "qty": "int64", "price": "float64", "exact": "decimal", "ok": "bool",
			"at": "timestamptz", "zip": "string", "note": "string"}
		if !reflect.DeepEqual(types, wantTypes) {
			t.Errorf("types %v, want %v", types, wantTypes)
		}
		// Partitions: 3 + 3 + 1 rows, first ordinals 1, 4, 7, the bytes
		// after the header cut without gap or overlap, bad rows counted
		// where they are.
		header := int64(len("id,qty,price,exact,ok,at,zip,note\n"))
		type part struct{ first, rows, rejected int64 }
		var got []part
		next := header
		for _, p := range rep.Partitions {
			got = append(got, part{p.First, p.Rows, p.Rejected})
			if p.Offset != next {
				t.Errorf("partition %d starts at byte %d, want %d", p.Index, p.Offset, next)
			}
			next = p.Offset + p.Length
		}
		if next != int64(len(content)) {
			t.Errorf("the partitions end at byte %d of %d", next, len(content))
		}
		if want := []part{{1, 3, 1}, {4, 3, 1}, {7, 1, 0}}; !reflect.DeepEqual(got, want) {
			t.Errorf("partitions %v, want %v", got, want)
		}
		var bad []string
		for _, b := range rep.Rejects {
			bad = append(bad, fmt.Sprintf("%d %s %s", b.Ordinal, b.Column, b.Value))
		}
		if want := []string{"2 qty x", "5 qty y"}; !reflect.DeepEqual(bad, want) {
			t.Errorf("plan's bad rows %v, want %v", bad, want)
		}

		res := f.e.Import(ctx, req)
		f.wantOutcome(t, res, Imported)
		if res.Rows.Read != 7 || res.Rows.Rejected != 2 || res.Rows.Inserted != 5 || res.Partitions.Total != 3 {
			t.Fatalf("import: %+v %+v", res.Rows, res.Partitions)
		}
		// The import stored the partitions plan showed.
		stored, err := f.e.st.CP.Partitions(ctx, f.e.st.DB, f.operation(t))
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range stored {
			r := rep.Partitions[i]
			if p.First != r.First || p.Rows != r.Rows || p.Rejected != r.Rejected || p.Offset != r.Offset || p.Length != r.Length || p.CRC != r.CRC {
				t.Errorf("stored partition %d %+v, plan showed %+v", i, p, r)
			}
		}
		rejects, err := f.e.st.Ledger.Rejects(ctx, f.e.st.DB, f.key(t))
		if err != nil {
			t.Fatal(err)
		}
		bad = nil
		for _, b := range rejects {
			bad = append(bad, fmt.Sprintf("%d %s %s", b.Ordinal, b.Column, b.Value))
		}
		if want := []string{"2 qty x", "5 qty y"}; !reflect.DeepEqual(bad, want) {
			t.Errorf("quarantined %v, want %v", bad, want)
		}
		// The table has the plan's types.
		tbl, err := f.e.st.Driver.Describe(ctx, f.e.st.DB, "mixed")
		if err != nil || tbl == nil {
			t.Fatalf("describe mixed: %v", err)
		}
		kinds := map[string]string{}
		for _, c := range tbl.Columns {
			if !strings.HasPrefix(c.Name, "_idemport") {
				kinds[c.Name] = c.Kind.String()
			}
		}
		if !reflect.DeepEqual(kinds, wantTypes) {
			t.Errorf("the table's columns are %v, want %v", kinds, wantTypes)
		}

		// Into the table now there: a text file is validated against its
		// types, whatever it would infer alone.
		more := Request{Path: f.write(t, "more.csv", "id,qty,price,exact,ok,at,zip,note\n8,80,8.5,8,true,2026-12-05T00:00:00Z,99501,h\n"),
			Mapping: Mapping{Table: "mixed"}}
		rep, err = PlanFile(ctx, f.e, more)
		if err != nil {
			t.Fatal(err)
		}
		types = map[string]string{}
		for _, c := range rep.Schema {
			types[c.Name] = c.Type.String()
		}
		if !reflect.DeepEqual(types, wantTypes) {
			t.Errorf("into the table: types %v, want the table's %v", types, wantTypes)
		}
		f.wantOutcome(t, f.e.Import(ctx, more), Imported)
		if got := f.rows(t, `SELECT `+f.tg.Text("price")+`, exact, zip FROM mixed WHERE id = 8`); fmt.Sprint(got) != "[[8.5 8 99501]]" {
			t.Errorf("row 8: %v", got)
		}
	})
}

// TestApplyWritesEveryValue checks what lands, value by value, compared
// as text with what the file says: in ordinal mode every row under its
// lineage (file key, 1-based ordinal); in natural-key mode, across
// partitions, only the last occurrence of a key (the others counted
// superseded), a later file updating, and an unchanged row counted so.
func TestApplyWritesEveryValue(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		content := "id,name,qty\n1,apple,3\n2,\"\",\n3,\"pear, ripe\",-7\n4,\"\"\"quoted\"\"\",9223372036854775807\n"
		res := f.e.Import(ctx, Request{Path: f.write(t, "fruit.csv", content), PartitionRows: 2})
		f.wantOutcome(t, res, Imported)
		got := f.rows(t, `SELECT _idemport_file, _idemport_row, id, name, `+f.tg.Text("qty")+` FROM fruit ORDER BY _idemport_row`)
		key := FileKey(res.FileID)
		want := [][]any{
			{key, int64(1), int64(1), "apple", "3"},
			{key, int64(2), int64(2), "", nil}, // "" is not NULL
			{key, int64(3), int64(3), "pear, ripe", "-7"},
			{key, int64(4), int64(4), `"quoted"`, "9223372036854775807"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fruit:\n got %#v\nwant %#v", got, want)
		}

		// Natural key: id 1 three times, id 2 twice, across three
		// partitions: the last occurrence wins.
		m := Mapping{Table: "stock", Key: []string{"id"}}
		day1 := "id,qty\n1,10\n2,20\n1,11\n3,30\n2,22\n1,12\n"
		res = f.e.Import(ctx, Request{Path: f.write(t, "day1.csv", day1), Mapping: m, PartitionRows: 2})
		f.wantOutcome(t, res, Imported)
		if res.Rows.Read != 6 || res.Rows.Inserted != 3 || res.Rows.Superseded != 3 {
			t.Errorf("day 1 counted %+v, want 6 read, 3 inserted, 3 superseded", res.Rows)
		}
		if got := f.rows(t, `SELECT id, qty FROM stock ORDER BY id`); fmt.Sprint(got) != "[[1 12] [2 22] [3 30]]" {
			t.Errorf("stock after day 1: %v", got)
		}
		day2 := "id,qty\n2,22\n3,31\n4,40\n"
		res = f.e.Import(ctx, Request{Path: f.write(t, "day2.csv", day2), Mapping: m})
		f.wantOutcome(t, res, Imported)
		if res.Rows.Read != 3 || res.Rows.Unchanged != 1 || res.Rows.Updated != 1 || res.Rows.Inserted != 1 {
			t.Errorf("day 2 counted %+v, want 1 unchanged, 1 updated, 1 inserted", res.Rows)
		}
		if got := f.rows(t, `SELECT id, qty FROM stock ORDER BY id`); fmt.Sprint(got) != "[[1 12] [2 22] [3 31] [4 40]]" {
			t.Errorf("stock after day 2: %v", got)
		}

		// With a version column, the newest version wins, not the last row.
		vm := Mapping{Table: "prices", Key: []string{"id"}, Version: "v"}
		res = f.e.Import(ctx, Request{Path: f.write(t, "prices.csv", "id,v,price\n1,2,b\n1,3,c\n1,1,a\n2,1,x\n"), Mapping: vm, PartitionRows: 2})
		f.wantOutcome(t, res, Imported)
		if got := f.rows(t, `SELECT id, v, price FROM prices ORDER BY id`); fmt.Sprint(got) != "[[1 3 c] [2 1 x]]" {
			t.Errorf("prices: %v", got)
		}
		// A later file with an older version of a key is stale for it.
		res = f.e.Import(ctx, Request{Path: f.write(t, "late.csv", "id,v,price\n1,2,old\n2,2,y\n"), Mapping: vm})
		f.wantOutcome(t, res, Imported)
		if res.Rows.Stale != 1 || res.Rows.Updated != 1 {
			t.Errorf("late file counted %+v, want 1 stale, 1 updated", res.Rows)
		}
		if got := f.rows(t, `SELECT id, v, price FROM prices ORDER BY id`); fmt.Sprint(got) != "[[1 3 c] [2 2 y]]" {
			t.Errorf("prices after the late file: %v", got)
		}
	})
}

// key returns the ledger key of the target's only operation.
func (f *fx) key(t *testing.T) ledger.Key {
	t.Helper()
	op := f.operation(t)
	return ledger.Key{Table: op.Table, FileID: op.FileID}
}

// TestRefusedReportsItsRows: a file refused for more bad rows than
// --max-rejects reports, in its result and in the ledger's refused
// operation, the rows the plan read and rejected, and nothing else.
func TestRefusedReportsItsRows(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		path := f.write(t, "bad.csv", "id,qty\n1,10\n2,x\n3,30\n4,y\n5,50\n")
		res := f.e.Import(ctx, Request{Path: path, MaxRejects: RejectLimit{Count: 1},
			Mapping: Mapping{Columns: map[string]idemtype.Type{"qty": idemtype.Int64}}})
		f.wantOutcome(t, res, Refused)
		want := idemtype.Rows{Read: 5, Rejected: 2}
		if res.Rows != want {
			t.Errorf("result's rows %+v, want %+v", res.Rows, want)
		}
		o := f.operation(t)
		op, _, err := f.e.st.Ledger.Get(ctx, f.e.st.DB, ledger.Key{Table: o.Table, FileID: o.FileID})
		if err != nil {
			t.Fatal(err)
		}
		if op == nil || op.State != ledger.Refused || op.Rows != want {
			t.Fatalf("stored operation %+v, want refused with rows %+v", op, want)
		}
	})
}
