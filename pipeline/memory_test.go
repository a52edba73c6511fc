package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader"
)

// wideRow is one row of wideFile: an id, an int64 with the edges among its
// values, and a text of any width, empty or absent (NULL) now and then.
type wideRow struct {
	id   int64
	n    int64
	text *string
}

// wideFile writes n rows of widely varying width as format (csv, tsv or
// jsonl) and returns the rows and the byte length of each line.
func wideFile(n int, format string, seed uint64) (content string, rows []wideRow, lines []int64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	edges := []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}
	var b strings.Builder
	switch format {
	case "csv":
		b.WriteString("id,n,text\n")
	case "tsv":
		b.WriteString("id\tn\ttext\n")
	}
	for i := range n {
		r := wideRow{id: int64(i + 1), n: rng.Int64() - math.MaxInt64/2}
		if i < len(edges) {
			r.n = edges[i]
		}
		switch k := rng.IntN(10); {
		case k == 0:
			// absent: NULL
		case k == 1 && format != "tsv": // TSV has no empty text apart from NULL
			s := ""
			r.text = &s
		default:
			s := strings.Repeat("x", 1+rng.IntN(600))
			if format == "csv" {
				s += `a, "q"`
			}
			r.text = &s
		}
		before := b.Len()
		switch format {
		case "csv":
			t := ""
			if r.text != nil {
				t = `"` + strings.ReplaceAll(*r.text, `"`, `""`) + `"`
			}
			fmt.Fprintf(&b, "%d,%d,%s\n", r.id, r.n, t)
		case "tsv":
			t := ""
			if r.text != nil {
				t = *r.text
			}
			fmt.Fprintf(&b, "%d\t%d\t%s\n", r.id, r.n, t)
		case "jsonl":
			m := map[string]any{"id": r.id, "n": r.n, "text": nil}
			if r.text != nil {
				m["text"] = *r.text
			}
			j, _ := json.Marshal(m)
			b.Write(j)
			b.WriteByte('\n')
		}
		rows = append(rows, r)
		lines = append(lines, int64(b.Len()-before))
	}
	return b.String(), rows, lines
}

// checkByteBounds checks that the partitions of a text file cover its rows
// without gap and that each ends with the row that brings it to limit
// bytes: every partition but the last holds at least limit bytes, and less
// than limit without its last row. It returns the number of partitions.
func checkByteBounds(t *testing.T, parts []reader.Partition, lines []int64, limit int64) int {
	t.Helper()
	next := int64(1)
	for i, p := range parts {
		if p.First != next || p.Rows < 1 {
			t.Fatalf("partition %d starts at row %d with %d rows, want row %d", i, p.First, p.Rows, next)
		}
		var bytes int64
		for o := p.First; o < p.First+p.Rows; o++ {
			bytes += lines[o-1]
		}
		if bytes != p.Length {
			t.Errorf("partition %d is %d bytes long, its rows %d", i, p.Length, bytes)
		}
		if last := lines[p.First+p.Rows-2]; bytes-last >= limit {
			t.Errorf("partition %d holds %d bytes before its last row, over the %d limit", i, bytes-last, limit)
		}
		if i < len(parts)-1 && bytes < limit {
			t.Errorf("partition %d ends at %d bytes, short of the %d limit", i, bytes, limit)
		}
		next = p.First + p.Rows
	}
	if next != int64(len(lines))+1 {
		t.Fatalf("the partitions end before row %d of %d", next, len(lines))
	}
	return len(parts)
}

// checkWide compares the whole table with rows, value by value.
func (f *fx) checkWide(t *testing.T, table string, rows []wideRow) {
	t.Helper()
	got := f.rows(t, `SELECT id, `+f.tg.Text("n")+`, text FROM `+table+` ORDER BY id`)
	if len(got) != len(rows) {
		t.Fatalf("%s has %d rows, want %d", table, len(got), len(rows))
	}
	for i, r := range rows {
		var text any
		if r.text != nil {
			text = *r.text
		}
		if want := []any{r.id, strconv.FormatInt(r.n, 10), text}; !reflect.DeepEqual(got[i], want) {
			t.Fatalf("%s row %d: got %#v, want %#v", table, i+1, got[i], want)
		}
	}
}

// TestPartitionsBoundedByBytes checks that a text file's partitions are
// cut by bytes as well as rows, for each text format, and that the rows
// land exactly; and that Parquet and Arrow files keep a partition per unit.
func TestPartitionsBoundedByBytes(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		const limit = 2000
		for i, format := range []string{"csv", "tsv", "jsonl"} {
			content, rows, lines := wideFile(300, format, uint64(i))
			header := int64(strings.IndexByte(content, '\n') + 1)
			if format == "jsonl" {
				header = 0
			}
			req := Request{Path: f.write(t, "wide."+format, content), PartitionRows: 1000, PartitionBytes: limit,
				Mapping: Mapping{Table: "wide_" + format, Columns: map[string]idemtype.Type{"text": idemtype.String}}}
			rep, err := PlanFile(ctx, f.e, req)
			if err != nil || rep.Error != "" {
				t.Fatalf("%s: plan: %v %s", format, err, rep.Error)
			}
			if rep.PartitionBytes != limit || rep.PartitionRows != 1000 {
				t.Errorf("%s: the plan shows bounds %d rows, %d bytes", format, rep.PartitionRows, rep.PartitionBytes)
			}
			if rep.Partitions[0].Offset != header {
				t.Errorf("%s: the first partition starts at byte %d, want %d", format, rep.Partitions[0].Offset, header)
			}
			n := checkByteBounds(t, rep.Partitions, lines, limit)
			if n < 20 {
				t.Fatalf("%s: %d partitions: the bytes bound cut too few", format, n)
			}
			res := f.e.Import(ctx, req)
			f.wantOutcome(t, res, Imported)
			if res.Partitions.Total != int64(n) || res.Rows.Inserted != int64(len(rows)) {
				t.Errorf("%s: imported %+v in %d partitions, want %d", format, res.Rows, res.Partitions.Total, n)
			}
			f.checkWide(t, "wide_"+format, rows)
		}

		// Parquet: a row group is one partition whatever its bytes.
		ids := make([]int64, 3000)
		prices := make([]float64, len(ids))
		for i := range ids {
			ids[i], prices[i] = int64(i)+1, float64(i)/4
		}
		path := f.writeParquet(t, "groups.parquet", ids, prices) // row groups of 1024 rows, 16 KiB
		rep, err := PlanFile(ctx, f.e, Request{Path: path, PartitionBytes: 1000})
		if err != nil || rep.Error != "" {
			t.Fatalf("parquet: plan: %v %s", err, rep.Error)
		}
		var got []int64
		for _, p := range rep.Partitions {
			got = append(got, p.Rows)
		}
		if want := []int64{1024, 1024, 952}; !reflect.DeepEqual(got, want) {
			t.Errorf("parquet partitions of %v rows, want a row group each %v", got, want)
		}
		f.wantOutcome(t, f.e.Import(ctx, Request{Path: path, PartitionBytes: 1000}), Imported)
		got = nil
		for _, r := range f.rows(t, `SELECT id, price FROM groups ORDER BY id`) {
			if r[1] != prices[r[0].(int64)-1] {
				t.Fatalf("groups row %v, want price %v", r, prices[r[0].(int64)-1])
			}
			got = append(got, r[0].(int64))
		}
		if !reflect.DeepEqual(got, ids) {
			t.Errorf("groups has ids %v, want %v", got, ids)
		}
	})
}

// TestResumeByteBoundedPartitions kills an import between two partitions
// cut by bytes, then resumes it with other bounds: the stored plan's
// partitions are the ones applied, and the rows land exactly once.
func TestResumeByteBoundedPartitions(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		content, rows, lines := wideFile(200, "csv", 9)
		path := f.write(t, "wide.csv", content)
		f.killedHolding(t, helperJob{Path: path, PartitionRows: 1000, PartitionBytes: 3000, Failpoint: "after-partition-commit:3"})
		op := f.operation(t)
		stored, err := f.e.st.CP.Partitions(ctx, f.e.st.DB, op)
		if err != nil {
			t.Fatal(err)
		}
		var parts []reader.Partition
		for _, p := range stored {
			parts = append(parts, p.Partition)
		}
		n := checkByteBounds(t, parts, lines, 3000)
		if got := testkit.Int(t, f.tg.DB, `SELECT count(*) FROM wide`); got != parts[0].Rows+parts[1].Rows+parts[2].Rows {
			t.Fatalf("after the kill the table has %d rows, want the first 3 partitions' %d", got, parts[0].Rows+parts[1].Rows+parts[2].Rows)
		}
		// The rerun asks for other bounds; the stored plan keeps its own.
		res := f.e.Import(ctx, Request{Path: path, PartitionRows: 7, PartitionBytes: 100 << 20})
		f.wantOutcome(t, res, Resumed)
		if res.Partitions.Total != int64(n) || res.Partitions.Skipped != 3 {
			t.Errorf("resumed %+v, want %d partitions, 3 done before", res.Partitions, n)
		}
		after, err := f.e.st.CP.Partitions(ctx, f.e.st.DB, op)
		if err != nil {
			t.Fatal(err)
		}
		for i := range after {
			if after[i].Partition.Offset != stored[i].Partition.Offset || after[i].Length != stored[i].Length || after[i].CRC != stored[i].CRC {
				t.Errorf("partition %d is %+v after the resume, %+v before", i, after[i].Partition, stored[i].Partition)
			}
		}
		f.checkWide(t, "wide", rows)
	})
}

// allBad writes n rows that all have a field too many (under a 2-column
// header), and good good rows after them.
func allBad(n, good int) string {
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,x,extra\n", i+1)
	}
	for i := range good {
		fmt.Fprintf(&b, "%d,ok\n", n+i+1)
	}
	return b.String()
}

// TestBadRowsBeyondMemory refuses a file with more bad rows than a plan
// pass ever held (1<<20) with its first ones shown and nothing written,
// and admits one with many bad rows within its limit, every bad row in the
// quarantine: 32 times what the spill holds in memory and 5 more, whose
// spill file (3 MB) is several times the buffers it is written and read
// through (1 MiB), so the spilled rows are read back across buffer
// refills and handed on in 32 whole batches and a last short one. (Until
// now SQLite quarantined 1<<20+5 rows here, 15 of the test's 18
// CPU-seconds, through the same code: the rows are handed on spillHeld at
// a time whatever their count.)
func TestBadRowsBeyondMemory(t *testing.T) {
	t.Parallel()
	const many = 1<<20 + 5
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		ctx := context.Background()
		path := f.write(t, "bad.csv", allBad(many, 0))
		req := Request{Path: path, MaxRejects: RejectLimit{Percent: 1}}

		// The pass itself holds the first bad rows only, and the spill a
		// bounded number in memory.
		r := newRun(f.e, req)
		r.defaults()
		_, plan, spill, err := r.planner().scan(ctx, planInput{}, nil, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Rejected != many || len(plan.Rejects) != maxReported || len(spill.held) != 0 || spill.f == nil || spill.n != many {
			t.Errorf("plan pass: %d bad rows, %d in the plan, %d held by the spill (%d spilled to a file: %v)",
				plan.Rejected, len(plan.Rejects), len(spill.held), spill.n, spill.f != nil)
		}
		spill.close()
		r.in.close(f.e.st.Log)

		res := f.e.Import(ctx, req)
		f.wantOutcome(t, res, Refused)
		if res.Refusal == nil || res.Refusal.Rejected != many || len(res.Refusal.Rejects) != maxReported {
			t.Fatalf("refusal: %+v", res.Refusal)
		}
		for i, b := range res.Refusal.Rejects {
			if b.Ordinal != int64(i+1) || b.Code != reader.CodeFieldCount || b.Row != fmt.Sprintf("%d,x,extra\n", i+1) {
				t.Errorf("refusal's bad row %d: %+v", i, b)
			}
		}
		if f.tg.TableExists(t, "bad") {
			t.Errorf("the refused file created its table")
		}
		if n := testkit.Int(t, f.tg.DB, `SELECT count(*) FROM `+f.tg.Ledger("rejects")); n != 0 {
			t.Errorf("the refused file quarantined %d rows", n)
		}

		// Within the limit: every bad row quarantined, in order, exactly.
		// (PostgreSQL stores as many through the same spill, only slower:
		// there a few thousand, past what the spill holds in memory.)
		many := int64(32*spillHeld + 5)
		if f.tg.IsPostgres() {
			many = 3 * spillHeld
		}
		ok := Request{Path: f.write(t, "mostly.csv", allBad(int(many), 3)), MaxRejects: RejectLimit{Percent: 100}}
		res = f.e.Import(ctx, ok)
		f.wantOutcome(t, res, Imported)
		if res.Rows.Rejected != many || res.Rows.Inserted != 3 {
			t.Fatalf("imported %+v", res.Rows)
		}
		q := `SELECT count(*), min(ordinal), max(ordinal), count(DISTINCT ordinal), sum(ordinal) FROM ` + f.tg.Ledger("rejects") +
			` WHERE table_name = 'mostly' AND code = '` + reader.CodeFieldCount + `'`
		if got, want := fmt.Sprint(f.rows(t, q)), fmt.Sprint([][]any{{many, int64(1), many, many, many * (many + 1) / 2}}); got != want {
			t.Errorf("quarantine: %s, want %s", got, want)
		}
		row := f.rows(t, `SELECT raw_row, coalesce(raw_value, '') FROM `+f.tg.Ledger("rejects")+` WHERE table_name = 'mostly' AND ordinal = `+strconv.FormatInt(many, 10))
		if fmt.Sprint(row) != fmt.Sprintf("[[%d,x,extra\n ]]", many) {
			t.Errorf("the last bad row is quarantined as %q", row)
		}
		if got := f.rows(t, `SELECT id, v FROM mostly ORDER BY id`); fmt.Sprint(got) != fmt.Sprintf("[[%d ok] [%d ok] [%d ok]]", many+1, many+2, many+3) {
			t.Errorf("mostly: %v", got)
		}
	})
}
