package postgres

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/internal/pgtest"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestWriteUnderTakesTheSavepoint writes batches through WriteUnder, which
// takes the caller's savepoint in the message of the batch's first
// statement, along each path that does: a natural key of one integer
// column (its first key looked up in the same round trip), a text key
// (no look-up: the savepoint rides in the COPY's message), an ordinal
// target (the look-up of its ordinals), a batch that is merged, and one
// staged at once (a text key after a merge: the staging COPY's message). A
// batch whose row a CHECK refuses must fail with a *sink.RowError after
// the savepoint was taken, so that rolling back to it undoes the batch
// alone, not the batch written before it, whose savepoint its first
// message released; the last batch written whole leaves its own taken.
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
			// The batch before, whose savepoint the refused batch's first
			// message released, is not undone with it.
			var kept int
			if err := tx.QueryRowContext(f.Ctx, `SELECT count(*) FROM under WHERE name IN ('one', 'two')`).Scan(&kept); err != nil || kept != 2 {
				t.Fatalf("after the refused batch, %d of the 2 rows of the batch written before it (%v), want them kept", kept, err)
			}
			if err := write("stored keys", 1, []any{id(1), "ONE", 1}, []any{id(2), "two", 2}); err != nil {
				t.Fatal(err)
			}
			// Refused again, after a batch merged: with a text key the
			// batch is staged at once (no COPY straight into the table is
			// tried), and the staging COPY's message takes its savepoint;
			// the batch before stays.
			refused("stored keys merged, one refused", 1, []any{id(1), "uno", 1}, []any{id(2), "dos", -2})
			if err := tx.QueryRowContext(f.Ctx, `SELECT count(*) FROM under WHERE name IN ('ONE', 'two')`).Scan(&kept); err != nil || kept != 2 {
				t.Fatalf("after the refused merge, %d of the 2 rows of the batch merged before it (%v), want them kept", kept, err)
			}
			if err := write("more new keys", 2, []any{id(3), "three", 3}); err != nil {
				t.Fatal(err)
			}
			// Written whole, the last batch left its savepoint taken (and
			// the COPY's, inside it), the ones before released.
			wantOneHeld(t, tx, "idemport_test")
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

// wantOneHeld checks that exactly one savepoint name is taken in tx, the
// last batch's, which WriteUnder left taken: every batch written before it
// released its own with the message that took the next. It releases it.
func wantOneHeld(t *testing.T, tx *sql.Tx, name string) {
	t.Helper()
	ctx := t.Context()
	if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name); err != nil {
		t.Fatalf("release the savepoint of the last batch written: %v, want it taken", err)
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT check_released"); err != nil {
		t.Fatal(err)
	}
	_, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT "+name)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3B001" {
		t.Fatalf("release the savepoint of an earlier batch: %v, want it released already (3B001)", err)
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT check_released; RELEASE SAVEPOINT check_released"); err != nil {
		t.Fatal(err)
	}
}

// releaseCounter is a socket that counts the messages its client sends
// that release a savepoint and nothing else: each is a round trip of its
// own.
type releaseCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c releaseCounter) Write(b []byte) (int, error) {
	if len(b) > 5 && b[0] == 'Q' && strings.HasPrefix(strings.TrimRight(string(b[5:]), "\x00"), "RELEASE SAVEPOINT") &&
		!strings.Contains(string(b[5:]), ";") {
		c.n.Add(1)
	}
	return c.Conn.Write(b)
}

// TestWriteUnderReleasesInTheNextMessage: a batch written whole through
// WriteUnder leaves its savepoint taken, and the next batch of the
// transaction releases it in the message that takes its own, not in a
// round trip of its own: batches of new keys copied straight into the
// table, and batches merged. At most one is left taken at a time (each is
// a subtransaction), and the next transaction, in which the last one no
// longer exists, writes as the first did.
func TestWriteUnderReleasesInTheNextMessage(t *testing.T) {
	db, schema := pgtest.Open(t)
	ctx := t.Context()
	if _, err := db.ExecContext(ctx, `CREATE TABLE heldsp (id bigint PRIMARY KEY, name text, _idemport_file bigint, _idemport_row bigint)`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(pgtest.URL(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	releases := &atomic.Int64{}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return releaseCounter{c, releases}, nil
	}
	cdb := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { cdb.Close() })
	conn, err := cdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := drivertest.Schema(drivertest.I64("id"), drivertest.Str("name"))
	sw, err := Driver{}.Writer(ctx, conn, sink.Target{Table: "heldsp", Key: []string{"id"}}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Close()
	w := sw.(sink.SavepointWriter)
	next := int64(1)
	write := func(tx *sql.Tx, rows ...[]any) {
		t.Helper()
		rec := drivertest.Batch(t, s, rows...)
		defer rec.Release()
		if _, err := w.WriteUnder(ctx, tx, "idemport_test", 1, rec, drivertest.Seq(next, next+int64(len(rows))-1)); err != nil {
			t.Fatal(err)
		}
		next += int64(len(rows))
	}
	for round := range 2 {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		base := round * 10
		write(tx, []any{base + 1, "one"}, []any{base + 2, "two"})    // copied straight in
		write(tx, []any{base + 3, "three"}, []any{base + 4, "four"}) // copied straight in
		write(tx)                                                    // no rows: sends nothing
		write(tx, []any{base + 2, "TWO"}, []any{base + 5, "five"})   // merged
		write(tx, []any{base + 6, "six"})                            // merged (after a merge)
		if got := releases.Load(); got != 0 {
			t.Errorf("round %d: %d savepoints released in a round trip of their own, want 0", round, got)
		}
		if round == 0 {
			// The last batch's savepoint ends with the transaction.
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		wantOneHeld(t, tx, "idemport_test")
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	drivertest.WantTable(t, "the batches written", drivertest.Strings(t, db, `SELECT id || '|' || name FROM heldsp ORDER BY id`),
		"1|one", "2|TWO", "3|three", "4|four", "5|five", "6|six",
		"11|one", "12|TWO", "13|three", "14|four", "15|five", "16|six")
}
