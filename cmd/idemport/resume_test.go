package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/internal/testkit"
)

// readStats is the "read" object of a result line.
type readStats struct {
	BytesRead     int64 `json:"bytes_read"`
	RowGroupsRead int64 `json:"row_groups_read"`
}

func importRead(t *testing.T, dir string, code int, args ...string) (result, readStats) {
	t.Helper()
	run := testkit.Exec(t, dir, nil, append([]string{"import", "--output", "json"}, args...)...)
	if run.Code != code {
		t.Fatalf("exit %d, want %d: %s %s", run.Code, code, run.Stdout, run.Stderr)
	}
	var r struct {
		result
		Read readStats `json:"read"`
	}
	if err := json.Unmarshal([]byte(run.Stdout), &r); err != nil {
		t.Fatalf("%q: %v", run.Stdout, err)
	}
	return r.result, r.Read
}

// TestResumeReadsOnlyUnfinishedPartitions kills an import after 9 of its 10
// partitions committed; the rerun must read only the last partition's
// bytes (it seeks there) and no row group but the last.
func TestResumeReadsOnlyUnfinishedPartitions(t *testing.T) {
	t.Parallel()
	t.Run("csv", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "orders.csv")
		testkit.Orders(t, path, 10000, 31)
		st, _ := os.Stat(path)
		args := []string{"--partition-rows", "1000", "orders.csv"}
		_, full := importRead(t, dir, 0, append([]string{"--into", filepath.Join(dir, "full.db")}, args...)...)
		if full.BytesRead < 2*st.Size() {
			t.Fatalf("a full import read %d bytes of a %d-byte file; it plans and applies, so at least twice", full.BytesRead, st.Size())
		}
		killed := testkit.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:9"}, append([]string{"import"}, args...)...)
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
		}
		res, read := importRead(t, dir, 0, args...)
		if res.Outcome != "resumed" || res.Partitions.Skipped != 9 || !res.QuickCheck {
			t.Fatalf("rerun: %+v", res)
		}
		db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
		last := testkit.Int(t, db, `SELECT byte_length FROM idemport_partitions WHERE idx = 9`)
		header := testkit.Int(t, db, `SELECT byte_offset FROM idemport_partitions WHERE idx = 0`)
		// The header is read to open the file (in pieces of 64 KiB); then
		// only the last partition.
		if read.BytesRead < last || read.BytesRead > last+header+64<<10 || read.BytesRead > st.Size()/5 {
			t.Fatalf("the resumed run read %d bytes; the last partition has %d of the file's %d", read.BytesRead, last, st.Size())
		}
	})
	t.Run("parquet", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "orders.parquet")
		writeRowGroups(t, path, 10, 100)
		args := []string{"orders.parquet"}
		killed := testkit.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:9"}, append([]string{"import"}, args...)...)
		if killed.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: %d %s", killed.Code, killed.Stderr)
		}
		res, read := importRead(t, dir, 0, args...)
		if res.Outcome != "resumed" || res.Partitions.Skipped != 9 || res.Partitions.Total != 10 {
			t.Fatalf("rerun: %+v", res)
		}
		if read.RowGroupsRead != 1 {
			t.Fatalf("the resumed run decoded %d row groups, want only the unfinished one", read.RowGroupsRead)
		}
		db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
		if n := testkit.Int(t, db, `SELECT count(DISTINCT id) FROM orders`); n != 1000 {
			t.Fatalf("%d distinct ids, want 1000", n)
		}
	})
}

// writeRowGroups writes a Parquet file of groups row groups of n rows:
// id (1..), label.
func writeRowGroups(t *testing.T, path string, groups, n int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "label", Type: arrow.BinaryTypes.String}}, nil)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	for g := 0; g < groups; g++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := 0; i < n; i++ {
			id++
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append("row")
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

// TestSourceChangedStopsTheAttempt appends to a file while its import is
// frozen between partitions: the attempt stops with "source changed"
// instead of committing rows of another version of the file, and its JSON
// result says that the 300 rows of the 3 partitions it committed were
// removed again.
func TestSourceChangedStopsTheAttempt(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"append", "rewrite"} {
		t.Run(change, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "orders.csv")
			testkit.Orders(t, path, 1000, 32)
			cmd := testkit.Cmd(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:3:stop"}, "import", "--partition-rows", "100", "--output", "json", "orders.csv")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			testkit.WaitStopped(t, cmd.Process.Pid)
			if change == "append" {
				f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("1999999998,1,SKU-X,1,1.00,paid,2024-01-01T00:00:00Z,late\n")
				f.Close()
			} else {
				b, _ := os.ReadFile(path)
				b[len(b)-5] = 'Z' // inside the last partition, same size
				os.WriteFile(path, b, 0o644)
			}
			testkit.Continue(cmd.Process)
			r := testkit.Wait(t, cmd)
			if r.Code != 1 || !strings.Contains(r.Stdout, "source changed") || !strings.Contains(r.Stdout, "abandoned") {
				t.Fatalf("exit %d: %s", r.Code, r.Stdout)
			}
			// The operation is abandoned and the 300 rows its 3 partitions
			// committed are gone with it: the complete file, imported
			// later, must not duplicate them.
			db := testkit.Open(t, filepath.Join(dir, "idemport.db"))
			if n := testkit.Int(t, db, `SELECT count(*) FROM orders`); n != 0 {
				t.Fatalf("%d rows left by the abandoned import", n)
			}
			if st := testkit.Query(t, db, `SELECT state FROM idemport_operations`); len(st) != 1 || st[0][0] != "abandoned" {
				t.Fatalf("operation states %v, want abandoned", st)
			}
			res := lastResult(t, out.String())
			if res.Rows.Inserted != 300 || res.Removed != 300 || res.Partitions.Total != 10 || res.Partitions.Committed != 3 || res.Partitions.Skipped != 0 {
				t.Errorf("result rows %+v, removed %d, partitions %+v; want 300 inserted and removed, 3 of 10 partitions committed", res.Rows, res.Removed, res.Partitions)
			}
			if n := testkit.Int(t, db, `SELECT count(*) FROM idemport_partitions`); n != 0 {
				t.Fatalf("%d partition rows left", n)
			}
		})
	}
}

// TestSourceChangedUnderResumedAttempt kills an import after 3 of its 10
// partitions committed, then changes the file under the run that resumes
// it, before that run commits anything (it is stopped after its claim):
// the resumed attempt stops with "source changed", and the abandonment
// removes the 300 rows the killed attempt committed, not only those of
// the attempt that found the change (none), as its JSON result counts
// them. A later import of the changed file then holds exactly its rows,
// each once.
func TestSourceChangedUnderResumedAttempt(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, change := range []string{"append", "rewrite"} {
			t.Run(change, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				path := filepath.Join(dir, "orders.csv")
				rows := testkit.Orders(t, path, crashRows, 33)
				args := []string{"import", "--partition-rows", "100", "orders.csv"}
				if r := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:3"}, args...); r.Signal != syscall.SIGKILL {
					t.Fatalf("first run not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 300 {
					t.Fatalf("the killed run left %d rows, want its 3 partitions' 300", n)
				}
				resumed := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-claim:1:stop"}, append(slices.Clone(args), "--output", "json")...))
				if change == "append" {
					extra := []string{"1999999998", "1", "SKU-X", "1", "1.00", "paid", "2024-01-01T00:00:00Z", "late"}
					f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.WriteString(strings.Join(extra, ",") + "\n")
					if err := f.Close(); err != nil {
						t.Fatal(err)
					}
					rows = append(rows, extra)
				} else {
					// The last row's status, same size: the last partition's bytes.
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					last := rows[len(rows)-1]
					old := strings.Join(last, ",") + "\n"
					if !strings.HasSuffix(string(b), old) || last[5] == "" {
						t.Fatalf("the file does not end with its last row %q", old)
					}
					last[5] = strings.Repeat("Z", len(last[5])) // the status
					b = append(b[:len(b)-len(old)], strings.Join(last, ",")+"\n"...)
					if err := os.WriteFile(path, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				testkit.Continue(resumed.cmd.Process)
				r := testkit.Wait(t, resumed.cmd)
				if r.Code != 1 || !strings.Contains(r.Stdout, "source changed") {
					t.Fatalf("resumed run: exit %d, want 1 saying the source changed\n%s%s", r.Code, r.Stdout, r.Stderr)
				}
				if n := rowsLeft(t, tg, "orders"); n != 0 {
					t.Errorf("%d rows left by the abandoned import, want none: the killed attempt's rows must go with it", n)
				}
				if !strings.Contains(r.Stdout, "the import was abandoned and the 300 rows it had committed were removed") {
					t.Errorf("resumed run does not say the import was abandoned with its 300 rows:\n%s", r.Stdout)
				}
				if res := lastResult(t, r.Stdout); res.Rows.Inserted != 0 || res.Removed != 300 || res.Partitions.Total != 10 || res.Partitions.Committed != 0 || res.Partitions.Skipped != 3 {
					t.Errorf("resumed run's result rows %+v, removed %d, partitions %+v; want none inserted, 300 removed, 3 of 10 partitions skipped", res.Rows, res.Removed, res.Partitions)
				}
				got := testkit.Query(t, tg.DB, `SELECT state, (SELECT count(*) FROM `+tg.Ledger("partitions")+`) FROM `+tg.Ledger("operations"))
				if want := [][]any{{"abandoned", int64(0)}}; !reflect.DeepEqual(got, want) {
					t.Fatalf("operations (state, partitions) %v, want %v", got, want)
				}

				res := importTo(t, tg, dir, nil, 0, args[1:]...)
				if res.Outcome != "imported" || res.Rows.Inserted != int64(len(rows)) {
					t.Fatalf("the changed file imported later: %+v", res)
				}
				checkOrders(t, tg, "orders", rows)
				got = testkit.Query(t, tg.DB, tg.Rebind(`SELECT state, rows_inserted FROM `+tg.Ledger("operations")+` WHERE file_id = ?`), res.FileID)
				if want := [][]any{{"completed", int64(len(rows))}}; !reflect.DeepEqual(got, want) {
					t.Fatalf("the later operation (state, inserted) %v, want %v", got, want)
				}
			})
		}
	})
}

// lastResult returns the last JSON result line of out, which may hold
// log lines besides.
func lastResult(t *testing.T, out string) result {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			return parseResults(t, lines[i])[0]
		}
	}
	t.Fatalf("no JSON result in:\n%s", out)
	return result{}
}
