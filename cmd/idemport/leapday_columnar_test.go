package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// TestMariaDBRefusesLeapDayOfYearZeroInParquet: a Parquet file's date32
// and timestamp values are checked against MariaDB's calendar in the
// plan, as a CSV file's date and timestamp columns are: 0000-02-29 is a
// bad row, so over --max-rejects the file is refused before any effect
// (exit 5; the row group of good rows before it not written either), the
// message naming the file, each row, column and value and the reason,
// into a new table as into an existing one of DATE and DATETIME columns;
// within it the other rows import. The table refused them only as they
// were written, after earlier row groups committed.
func TestMariaDBRefusesLeapDayOfYearZeroInParquet(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		l := &life{t: t, tg: testkit.NewTarget(t, name, dir), dir: dir}
		leap := arrow.Date32(-719469) // 0000-02-29
		if got := leap.ToTime().Format("2006-01-02"); got != "0000-02-29" {
			t.Fatalf("day %d is %s", leap, got)
		}
		const day = int64(86400_000_000)
		// Row group 1: rows 1-3, good (0000-02-28, 0000-03-01 and the
		// leap day of the year 4 are days MariaDB has); row group 2:
		// row 4's date and row 5's timestamp are 0000-02-29.
		writeDated(t, filepath.Join(dir, "z.parquet"), [][]dated{
			{{1, leap - 1, int64(leap-1) * day}, {2, leap + 1, int64(leap+1)*day + 36e8}, {3, leap + 1461, 0}},
			{{4, leap, 0}, {5, 0, int64(leap)*day + 10*36e8}, {6, 1, day}},
		})
		for _, c := range []struct {
			table, create, before string // the table, made by create unless "", holds before after the refusal
		}{
			{"z", "", "(no table)"},
			{"y", `CREATE TABLE y (id bigint PRIMARY KEY, d date, t datetime(6), _idemport_file bigint, _idemport_row bigint)`, ""},
		} {
			table := c.table
			if c.create != "" {
				testkit.Query(t, l.tg.DB, c.create)
			}
			args := []string{"import", "--table", table, "--key", "id", "z.parquet"}
			r := l.run(5, args...)
			for _, want := range []string{`z.parquet: refused: 2 of 6 rows are bad (at most 0 allowed); row 4 column "d" value "0000-02-29": ` + noLeapDay,
				`row 5 column "t" value "0000-02-29T10:00:00Z": ` + noLeapDay} {
				if !strings.Contains(r.Stdout, want) {
					t.Fatalf("%s: the refusal does not say %q:\n%s", table, want, r.Stdout)
				}
			}
			l.wantRows(table, c.before, "id")
			l.run(0, append(args, "--max-rejects", "2")...)
			got := testkit.Query(t, l.tg.DB, `SELECT id, CAST(d AS CHAR), CAST(t AS CHAR) FROM `+table+` ORDER BY id`)
			want := [][]any{{int64(1), "0000-02-28", "0000-02-28 00:00:00.000000"}, {int64(2), "0000-03-01", "0000-03-01 01:00:00.000000"},
				{int64(3), "0004-02-29", "1970-01-01 00:00:00.000000"}, {int64(6), "1970-01-02", "1970-01-02 00:00:00.000000"}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s holds %v, want %v", table, got, want)
			}
		}
	})
}

// dated is a row of writeDated's file: an id, a date32 and a timestamp
// (µs, UTC).
type dated struct {
	id int64
	d  arrow.Date32
	t  int64
}

// writeDated writes a Parquet file of columns id (int64), d (date32) and
// t (timestamp[us, UTC]), one row group per element of groups.
func writeDated(t *testing.T, path string, groups [][]dated) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}, nil)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for _, r := range g {
			b.Field(0).(*array.Int64Builder).Append(r.id)
			b.Field(1).(*array.Date32Builder).Append(r.d)
			b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t))
		}
		rec := b.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
