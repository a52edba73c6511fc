package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestWriteUnderTakesTheSavepoint writes batches through WriteUnder, which
// takes the caller's savepoint in the message of the batch's first
// statement, along each path that does: a natural key of one integer
// column (its first key looked up in the same round trip), a text key
// (no look-up: the savepoint rides in the COPY's message), an ordinal
// target (the look-up of its ordinals), and a batch that is merged. A
// batch whose row a CHECK refuses must fail with a *sink.RowError after
// the savepoint was taken, so that rolling back to it undoes the batch
// alone; a batch written whole must have released it.
func TestWriteUnderTakesTheSavepoint(t *testing.T) {
	for _, c := range []struct {
		name, ddl string
		tg        sink.Target
		str       bool
	}{
		{"integer key", `id bigint PRIMARY KEY, name text, v bigint CHECK (v >= 0), _idemport_file bigint, _idemport_row bigint`, sink.Target{Table: "under", Key: []string{"id"}}, false},
		{"text key", `id text PRIMARY KEY, name text, v bigint CHECK (v >= 0), _idemport_file bigint, _idemport_row bigint`, sink.Target{Table: "under", Key: []string{"id"}}, true},
		{"ordinal", `_idemport_file bigint, _idemport_row bigint, id bigint, name text, v bigint CHECK (v >= 0), PRIMARY KEY (_idemport_file, _idemport_row)`, sink.Target{Table: "under"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := drivertest.Open(t, open(t))
			key := drivertest.I64("id")
			if c.str {
				key = drivertest.Str("id")
			}
			s := drivertest.Schema(key, drivertest.Str("name"), drivertest.I64("v"))
			f.Exec(`CREATE TABLE under (` + c.ddl + `)`)
			w, ok := f.Writer(c.tg, s).(sink.SavepointWriter)
			if !ok {
				t.Fatal("the writer is not a sink.SavepointWriter")
			}
			id := func(i int) any {
				if c.str {
					return string(rune('a' + i))
				}
				return i
			}
			tx, err := f.Conn.BeginTx(f.Ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			write := func(what string, fileKey int64, rows ...[]any) error {
				t.Helper()
				rec := drivertest.Batch(t, s, rows...)
				defer rec.Release()
				_, err := w.WriteUnder(f.Ctx, tx, "idemport_test", fileKey, rec, drivertest.Seq(1, int64(len(rows))))
				return err
			}
			// A refused batch: the savepoint was taken, and rolling back to
			// it leaves the transaction usable, the batch undone.
			refused := func(what string, fileKey int64, rows ...[]any) {
				t.Helper()
				err := write(what, fileKey, rows...)
				var re *sink.RowError
				if !errors.As(err, &re) {
					t.Fatalf("%s: %v, want a *sink.RowError", what, err)
				}
				if _, err := tx.ExecContext(f.Ctx, "ROLLBACK TO SAVEPOINT idemport_test; RELEASE SAVEPOINT idemport_test"); err != nil {
					t.Fatalf("%s: roll back to the savepoint: %v", what, err)
				}
			}
			refused("new keys, one refused", 1, []any{id(1), "one", 1}, []any{id(2), "two", -2})
			if err := write("new keys", 1, []any{id(1), "one", 1}, []any{id(2), "two", 2}); err != nil {
				t.Fatal(err)
			}
			// Stored keys (a merge; in ordinal mode the same ordinals),
			// one refused.
			refused("stored keys, one refused", 1, []any{id(1), "ONE", 1}, []any{id(2), "TWO", -2})
			if err := write("stored keys", 1, []any{id(1), "ONE", 1}, []any{id(2), "two", 2}); err != nil {
				t.Fatal(err)
			}
			if err := write("more new keys", 2, []any{id(3), "three", 3}); err != nil {
				t.Fatal(err)
			}
			// Written whole, the batch released its savepoint (and the
			// COPY's, inside it).
			if _, err := tx.ExecContext(f.Ctx, "SAVEPOINT check_released"); err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(f.Ctx, "ROLLBACK TO SAVEPOINT idemport_test")
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "3B001" {
				t.Fatalf("roll back to the savepoint of a batch written: %v, want it released (3B001)", err)
			}
			if _, err := tx.ExecContext(f.Ctx, "ROLLBACK TO SAVEPOINT check_released"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			want := []string{"1|'ONE'|1|1|1", "2|'two'|2|1|2", "3|'three'|3|2|1"}
			if c.str {
				want = []string{"'b'|'ONE'|1|1|1", "'c'|'two'|2|1|2", "'d'|'three'|3|2|1"}
			}
			drivertest.WantTable(t, "the batches written", f.Table("under", "id", "id", "name", "v", sink.FileColumn, sink.RowColumn), want...)
		})
	}
}
