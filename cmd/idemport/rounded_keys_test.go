package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// TestKeysTheColumnRoundsOntoOne: two rows of one file whose keys differ
// as the file writes them and are one key as the key column holds them:
// 00:00:00.6 and 00:00:01 to a PostgreSQL timestamp(0), which rounds;
// 00:00:00.6 and 00:00:00.2 to a MariaDB DATETIME(0), which truncates.
// The plan keys them as the column stores them, so the earlier row is
// superseded and the later one applied (1 inserted, 1 superseded), by a
// plain and (on PostgreSQL) an --atomic import, and a rerun changes
// nothing. Without it
// PostgreSQL failed both imports on every rerun with "ON CONFLICT DO
// UPDATE command cannot affect row a second time" (exit 1), and MariaDB
// counted 1 inserted and 1 updated for a table of one row.
func TestKeysTheColumnRoundsOntoOne(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		col := secondsColumnOf(name)
		body, stored := "ts,v\n2024-01-01 00:00:00.6,a\n2024-01-01 00:00:01,b\n", "2024-01-01 00:00:01"
		if name == testkit.MariaDB {
			body, stored = "ts,v\n2024-01-01 00:00:00.6,a\n2024-01-01 00:00:00.2,b\n", "2024-01-01 00:00:00"
		}
		writeFile(t, dir, "k.csv", body)
		col.importOntoOne(t, tg, dir, "rk", "k.csv", stored)
	})
}

// secondsColumn is a target's timestamp column of whole seconds, whose
// keys the plan keys as the column stores them: its type (PostgreSQL's
// timestamp(0) rounds, MariaDB's DATETIME(0) truncates), and column ts
// read as text.
type secondsColumn struct{ create, asText string }

// secondsColumnOf returns the target name's secondsColumn.
func secondsColumnOf(name string) secondsColumn {
	if name == testkit.MariaDB {
		return secondsColumn{"DATETIME(0)", "CAST(ts AS CHAR)"}
	}
	return secondsColumn{"timestamp(0)", "ts::text"}
}

// importOntoOne imports file, two rows whose keys the column stores as
// one (stored), into new tables keyed by ts of the column, table and
// table_atomic (with --atomic), twice each: the first run counts 1
// inserted and 1 superseded, and each leaves the later row alone, b.
func (c secondsColumn) importOntoOne(t *testing.T, tg *testkit.Target, dir, table, file, stored string) {
	t.Helper()
	for _, tb := range []struct {
		table string
		extra []string
	}{{table, nil}, {table + "_atomic", []string{"--atomic"}}} {
		if _, err := tg.DB.Exec(`CREATE TABLE ` + tb.table + ` (ts ` + c.create + ` PRIMARY KEY, v text)`); err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ {
			r := importTo(t, tg, dir, nil, 0, append(append([]string{"--table", tb.table, "--key", "ts"}, tb.extra...), file)...)
			if run == 0 && (r.Rows.Inserted != 1 || r.Rows.Updated != 0 || r.Rows.Superseded != 1) {
				t.Errorf("%s: %+v, want 1 inserted, 1 superseded", tb.table, r.Rows)
			}
			if got := testkit.Query(t, tg.DB, `SELECT `+c.asText+`, v FROM `+tb.table); !reflect.DeepEqual(got, [][]any{{stored, "b"}}) {
				t.Errorf("%s run %d: holds %v, want [[%s b]]", tb.table, run, got, stored)
			}
		}
	}
}

// TestAtomicPartitionedKeyTheColumnRounds: an --atomic import into a
// partitioned PostgreSQL table, whose move counts its new rows before it
// runs, of a key that the timestamp(0) key column rounds onto a stored
// one (the file's 00:00:00.6, the stored 00:00:01). The count matches
// the staged key as the column holds it, as the classification and the
// move's ON CONFLICT do: 1 updated and 1 new, the rows by text. Counted
// by the staged key as the stage holds it, the stored key was taken for
// a new one, the move did other than its classification said on every
// try, and the import failed (exit 1) on every rerun.
func TestAtomicPartitionedKeyTheColumnRounds(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	if _, err := tg.DB.Exec(`CREATE TABLE rkp (ts timestamp(0) PRIMARY KEY, v text) PARTITION BY RANGE (ts);
		CREATE TABLE rkp_all PARTITION OF rkp FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
		INSERT INTO rkp VALUES ('2024-01-01 00:00:01', 'old')`); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "k.csv", "ts,v\n2024-01-01 00:00:00.6,new\n2024-01-01 00:00:02.4,two\n")
	r := importTo(t, tg, dir, nil, 0, "--atomic", "--table", "rkp", "--key", "ts", "k.csv")
	if r.Outcome != "imported" || r.Rows.Inserted != 1 || r.Rows.Updated != 1 {
		t.Errorf("k.csv: %s %+v, want imported, 1 inserted, 1 updated", r.Outcome, r.Rows)
	}
	want := [][]any{{"2024-01-01 00:00:01", "new"}, {"2024-01-01 00:00:02", "two"}}
	if got := testkit.Query(t, tg.DB, `SELECT ts::text, v FROM rkp ORDER BY ts`); !reflect.DeepEqual(got, want) {
		t.Errorf("rkp holds %v, want %v", got, want)
	}
}

// TestColumnarKeysTheColumnRoundsOntoOne is TestKeysTheColumnRoundsOntoOne
// for a Parquet and an Arrow file, whose plan pass keys a timestamp column
// of its own: the keys 00:00:00.6 and 00:00:01 (PostgreSQL timestamp(0),
// which rounds) or 00:00:00.6 and 00:00:00.2 (MariaDB DATETIME(0), which
// truncates) are one key, so the earlier row is superseded and the later
// applied (1 inserted, 1 superseded), and a rerun changes nothing. Without
// it PostgreSQL failed every run with SQLSTATE 21000 (exit 1) and MariaDB
// counted 1 inserted and 1 updated for a table of one row.
func TestColumnarKeysTheColumnRoundsOntoOne(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		col := secondsColumnOf(name)
		second := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
		stamps, stored := []int64{second + 600000, second + 1000000}, "2024-01-01 00:00:01"
		if name == testkit.MariaDB {
			stamps, stored = []int64{second + 600000, second + 200000}, "2024-01-01 00:00:00"
		}
		for _, format := range []string{"parquet", "arrow"} {
			file := "k." + format
			writeStamps(t, filepath.Join(dir, file), format, stamps, []string{"a", "b"})
			col.importOntoOne(t, tg, dir, "rk_"+format, file, stored)
		}
	})
}

// writeStamps writes a Parquet or Arrow IPC file of two columns, ts (a
// timestamp in microseconds, no zone) and v (text), one row per stamp.
func writeStamps(t *testing.T, path, format string, stamps []int64, vs []string) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "v", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, s := range stamps {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(s))
		b.Field(1).(*array.StringBuilder).Append(vs[i])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if format != "parquet" {
		testkit.WriteArrowFile(t, path, rec)
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotKeysTheColumnRounds: a --snapshot by a key its column rounds
// (PostgreSQL timestamp(0): 00:00:00.6 is stored as 00:00:01; MariaDB
// DATETIME(0): 00:00:01.6 as 00:00:01) sweeps only the rows the file
// lacks as the column holds its keys, plain, with two workers and with
// --atomic: the first snapshot of an empty table removes nothing, and the
// next, whose 00:00:00.7 (00:00:01.2) is the stored row's key, keeps that
// row and removes nothing either. The keys the file had were recorded as
// the file wrote them, so the sweep took the stored 00:00:01 for a key the
// file lacked: the first import was refused on every rerun ("would
// delete 1 of the 0 rows", exit 5, even with --max-delete 100%), and
// after it the next deleted the row its file holds.
func TestSnapshotKeysTheColumnRounds(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, []string{testkit.Postgres, testkit.MariaDB}, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		col := secondsColumnOf(name)
		first, again := "00:00:00.6", "00:00:00.7"
		if name == testkit.MariaDB {
			first, again = "00:00:01.6", "00:00:01.2"
		}
		writeFile(t, dir, "s1.csv", "ts,v\n2024-01-01 "+first+",a\n2024-01-01 00:00:02,b\n")
		writeFile(t, dir, "s2.csv", "ts,v\n2024-01-01 "+again+",a\n2024-01-01 00:00:02,b\n2024-01-01 00:00:03,c\n")
		for _, c := range []struct {
			table string
			extra []string
		}{{"rs_plain", nil}, {"rs_workers", []string{"--workers", "2", "--partition-rows", "1"}}, {"rs_atomic", []string{"--atomic"}}} {
			if _, err := tg.DB.Exec(`CREATE TABLE ` + c.table + ` (ts ` + col.create + ` PRIMARY KEY, v text)`); err != nil {
				t.Fatal(err)
			}
			for _, s := range []struct {
				file     string
				inserted int64
				want     [][]any
			}{
				{"s1.csv", 2, [][]any{{"2024-01-01 00:00:01", "a"}, {"2024-01-01 00:00:02", "b"}}},
				{"s2.csv", 1, [][]any{{"2024-01-01 00:00:01", "a"}, {"2024-01-01 00:00:02", "b"}, {"2024-01-01 00:00:03", "c"}}},
			} {
				r := importTo(t, tg, dir, nil, 0, append(append([]string{"--table", c.table, "--key", "ts", "--snapshot"}, c.extra...), s.file)...)
				if r.Rows.Inserted != s.inserted || r.Rows.Updated != 0 || r.Deleted != 0 {
					t.Errorf("%s %s: %+v deleted %d, want %d inserted, none updated or deleted", c.table, s.file, r.Rows, r.Deleted, s.inserted)
				}
				if got := testkit.Query(t, tg.DB, `SELECT `+col.asText+`, v FROM `+c.table+` ORDER BY ts`); !reflect.DeepEqual(got, s.want) {
					t.Errorf("%s after %s: holds %v, want %v", c.table, s.file, got, s.want)
				}
			}
		}
	})
}
