package mysql

import (
	"errors"
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// savepoints returns a function that tells how many SAVEPOINT statements
// f's connection has run since savepoints was called.
func savepoints(f *drivertest.Fx) func() int64 {
	f.T.Helper()
	read := func() int64 {
		f.T.Helper()
		var name string
		var n int64
		if err := f.Conn.QueryRowContext(f.Ctx, `SHOW SESSION STATUS LIKE 'Com_savepoint'`).Scan(&name, &n); err != nil {
			f.T.Fatal(err)
		}
		return n
	}
	n0 := read()
	return func() int64 { f.T.Helper(); return read() - n0 }
}

// TestWriteUnderTakesTheSavepoint writes batches through WriteUnder, which
// takes the caller's savepoint in the message of the batch's first
// statement, along each path that does: a natural key of one integer
// column (its first and last keys looked up in the same message), a key
// of two columns (no look-up: the savepoint rides in the load's message),
// an ordinal target (the look-up of its ordinals). A batch loaded
// straight into the target takes that savepoint alone, and a load that
// must be undone (a stored key inside the batch) is rolled back to it:
// the batches written before it, whose savepoints of the same name it
// replaced, stay. A batch whose row a CHECK refuses must fail with a
// *sink.RowError after the savepoint was taken, so that rolling back to
// it undoes the batch alone.
func TestWriteUnderTakesTheSavepoint(t *testing.T) {
	for _, c := range []struct {
		name, ddl string
		tg        sink.Target
	}{
		{"integer key", "id BIGINT PRIMARY KEY, b BIGINT, name LONGTEXT, v BIGINT CHECK (v >= 0), _idemport_file BIGINT, _idemport_row BIGINT", sink.Target{Table: "under", Key: []string{"id"}}},
		{"two key columns", "id BIGINT, b BIGINT, name LONGTEXT, v BIGINT CHECK (v >= 0), _idemport_file BIGINT, _idemport_row BIGINT, PRIMARY KEY (id, b)", sink.Target{Table: "under", Key: []string{"id", "b"}}},
		{"ordinal", "_idemport_file BIGINT, _idemport_row BIGINT, id BIGINT, b BIGINT, name LONGTEXT, v BIGINT CHECK (v >= 0), PRIMARY KEY (_idemport_file, _idemport_row)", sink.Target{Table: "under"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := writerFx(t)
			s := drivertest.Schema(drivertest.I64("id"), drivertest.I64("b"), drivertest.Str("name"), drivertest.I64("v"))
			f.Exec(`CREATE TABLE under (` + c.ddl + `)`)
			w, ok := f.Writer(c.tg, s).(sink.SavepointWriter)
			if !ok {
				t.Fatal("the writer is not a sink.SavepointWriter")
			}
			tx, err := f.Conn.BeginTx(f.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			ord := int64(1)
			write := func(fileKey int64, rows ...[]any) error {
				t.Helper()
				rec := drivertest.Batch(t, s, rows...)
				defer rec.Release()
				_, err := w.WriteUnder(f.Ctx, tx, "idemport_test", fileKey, rec, drivertest.Seq(ord, ord+int64(len(rows))-1))
				if err == nil {
					ord += int64(len(rows))
				}
				return err
			}
			written := func(what string, want int64, fileKey int64, rows ...[]any) {
				t.Helper()
				count := savepoints(f)
				if err := write(fileKey, rows...); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if n := count(); want >= 0 && n != want {
					t.Errorf("%s: %d SAVEPOINT statements, want %d", what, n, want)
				}
			}
			refused := func(what string, fileKey int64, rows ...[]any) {
				t.Helper()
				err := write(fileKey, rows...)
				var re *sink.RowError
				if !errors.As(err, &re) {
					t.Fatalf("%s: %v, want a *sink.RowError", what, err)
				}
				if _, err := tx.ExecContext(f.Ctx, "ROLLBACK TO SAVEPOINT idemport_test"); err != nil {
					t.Fatalf("%s: roll back to the savepoint: %v", what, err)
				}
			}
			written("new keys", 1, 1, []any{1, 1, "one", 1}, []any{2, 1, "two", 2})
			written("more new keys", 1, 1, []any{3, 1, "three", 3}, []any{4, 1, "four", 4})
			if c.tg.Ordinal() {
				refused("new rows, one refused", 1, []any{5, 1, "five", 5}, []any{6, 1, "six", -6})
			} else {
				// A key stored inside the batch: the load is undone, the
				// batch merged, under the same savepoint.
				written("a stored key inside", -1, 1, []any{5, 1, "five", 5}, []any{2, 1, "TWO", 2}, []any{6, 1, "six", 6})
				refused("a stored key inside, one refused", 1, []any{7, 1, "seven", 7}, []any{3, 1, "THREE", 3}, []any{8, 1, "eight", -8})
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			want := []string{"1|one|1|1|1", "2|two|2|1|2", "3|three|3|1|3", "4|four|4|1|4"}
			if !c.tg.Ordinal() {
				want = []string{"1|one|1|1|1", "2|TWO|2|1|6", "3|three|3|1|3", "4|four|4|1|4", "5|five|5|1|5", "6|six|6|1|7"}
			}
			drivertest.WantTable(t, c.name, drivertest.Strings(t, f.Env.DB, `SELECT CONCAT_WS('|', id, name, v, _idemport_file, _idemport_row) FROM under ORDER BY id`), want...)
		})
	}
}
