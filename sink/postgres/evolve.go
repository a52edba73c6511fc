package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// AddColumn implements sink.Driver. See alter for how it waits for the
// table's lock.
func (Driver) AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) error {
	if err := alter(ctx, tx, `ALTER TABLE `+quoteTable(table)+` ADD COLUMN IF NOT EXISTS `+q(f.Name)+` `+sqlType(idemtype.TypeOf(f))); err != nil {
		return fmt.Errorf("add column %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// Widen implements sink.Driver. The casts are exact: bigint to numeric,
// and to text bigint, numeric (its canonical text) and double precision
// (its shortest exact form, PostgreSQL 12 and later). See alter for how it
// waits for the table's lock.
func (Driver) Widen(ctx context.Context, tx *sql.Tx, table, column string, kind idemtype.Type) error {
	typ := sqlType(kind)
	if err := alter(ctx, tx, `ALTER TABLE `+quoteTable(table)+` ALTER COLUMN `+q(column)+` TYPE `+typ+` USING `+q(column)+`::`+typ); err != nil {
		return fmt.Errorf("widen column %s of %s to %s: %w", column, table, typ, err)
	}
	return nil
}

// HoldColumns implements sink.Driver with the lock every write takes
// (ROW EXCLUSIVE), taken before the transaction's first write: ALTER
// TABLE needs ACCESS EXCLUSIVE, so it waits for tx, and the Describe that
// follows the lock, with a snapshot taken after it, reads the columns of
// any ALTER TABLE that committed while tx waited.
func (Driver) HoldColumns(ctx context.Context, tx *sql.Tx, table string) error {
	if _, err := tx.ExecContext(ctx, `LOCK TABLE `+quoteTable(table)+` IN ROW EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("lock the columns of %s: %w", table, err)
	}
	return nil
}

// ColumnsVersion returns, inside tx after HoldColumns, a value that
// changes whenever the table's columns or keys as Describe reads them may
// have changed: the table's oid and the transaction IDs that wrote its
// rows in pg_class, pg_attribute and pg_index. Every ALTER TABLE that adds,
// drops, retypes or renames a column, sets or drops NOT NULL or a default,
// and every index created, validated or dropped writes a new version of
// one of those rows (or removes one), stamped with its own transaction's
// ID, so two equal values mean the same columns and keys; a vacuum that
// freezes the rows may change it with nothing changed, which costs a
// Describe. It is one query on the catalogs' indexes where Describe takes
// two with joins (0.06–0.13 ms against 0.3–0.7 ms). "" means no such table.
func (Driver) ColumnsVersion(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	var v sql.NullString
	err := tx.QueryRowContext(ctx, columnsVersion("$1"), quoteTable(table)).Scan(&v)
	if err == sql.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the version of the columns of %s: %w", table, err)
	}
	return v.String, nil
}

// columnsVersion is the query of ColumnsVersion, the table's quoted name
// being the SQL text name (a parameter or a literal).
func columnsVersion(name string) string {
	return `SELECT c.oid::text || '/' || c.xmin::text
		|| '/' || (SELECT string_agg(a.attnum::text || ':' || a.xmin::text, ',' ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0)
		|| '/' || coalesce((SELECT string_agg(i.indexrelid::text || ':' || i.xmin::text, ',' ORDER BY i.indexrelid) FROM pg_index i WHERE i.indrelid = c.oid), '')
		FROM pg_class c WHERE c.oid = to_regclass(` + name + `)`
}

// OpenPartition does, inside the partition transaction open on conn and
// before it writes, what CommitLazily, HoldColumns and ColumnsVersion do,
// in that order, and returns the version: one message of three
// statements, one round trip where there were three. The server runs them
// in order in the transaction and stops at the first that fails (a lock
// not available within lock_timeout, a table that does not exist), whose
// error it returns; the version is read after the lock, in a snapshot of
// its own. It is called only where CommitLazily may be: see there.
func (Driver) OpenPartition(ctx context.Context, conn *sql.Conn, table string) (string, error) {
	v, _, err := holdColumns(ctx, conn, table, true, false)
	return v, err
}

// HoldColumnsVersion does, inside the transaction open on conn, what
// HoldColumns and ColumnsVersion do, in that order, and returns the
// version, as OpenPartition does without changing how the transaction
// commits: one message of two statements, where the two were two round
// trips, three with the version's statement prepared on its first use. It
// is what the transaction that writes while the plan pass runs, which
// stores the plan and commits as the server says, and a worker's first
// partition under --evolve take.
func (Driver) HoldColumnsVersion(ctx context.Context, conn *sql.Conn, table string) (string, error) {
	v, _, err := holdColumns(ctx, conn, table, false, false)
	return v, err
}

// HoldColumnsDescribed is OpenPartition (lazy) or HoldColumnsVersion
// (not) that also describes the table, as Describe does, after the
// version and in the same message: what a transaction that prepares its
// writer needs (the worker's first partition, the overlap's transaction),
// in one round trip where it took two.
func (Driver) HoldColumnsDescribed(ctx context.Context, conn *sql.Conn, table string, lazy bool) (string, *sink.Table, error) {
	return holdColumns(ctx, conn, table, lazy, true)
}

// holdColumns is OpenPartition, and with lazy false HoldColumnsVersion;
// with describe, HoldColumnsDescribed.
func holdColumns(ctx context.Context, conn *sql.Conn, table string, lazy, describe bool) (string, *sink.Table, error) {
	stmt := `LOCK TABLE ` + quoteTable(table) + ` IN ROW EXCLUSIVE MODE; ` + columnsVersion(literal(quoteTable(table)))
	n := 2
	if lazy {
		stmt, n = `SET LOCAL synchronous_commit = off; `+stmt, 3
	}
	want := n
	if describe {
		stmt += `; ` + describeSQL(literal(quoteTable(table)), literal(schemaOf(table)))
		want++
	}
	var results []*pgconn.Result
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("connection is a %T, not of the pgx driver", dc)
		}
		var err error
		results, err = c.Conn().PgConn().Exec(ctx, stmt).ReadAll()
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("lock the columns of %s and read their version: %w", table, err)
	}
	if len(results) != want {
		return "", nil, fmt.Errorf("lock the columns of %s and read their version: %d results of %d statements", table, len(results), want)
	}
	version := ""
	if rows := results[n-1].Rows; len(rows) == 1 && rows[0][0] != nil {
		version = string(rows[0][0])
	}
	if !describe {
		return version, nil, nil
	}
	rows, i := results[n].Rows, -1
	t, err := readDescribed(table, func() bool { i++; return i < len(rows) }, func(dest ...any) error { return scanText(rows[i], dest...) })
	if err == nil {
		t, err = described(table, t)
	}
	if err != nil {
		return "", nil, fmt.Errorf("describe table %s: %w", table, err)
	}
	return version, t, nil
}

// scanText scans row, a row of a simple query's result (each value in
// its text form, none NULL), into dest: *string, *bool or *int64.
func scanText(row [][]byte, dest ...any) error {
	if len(row) != len(dest) {
		return fmt.Errorf("%d values for %d destinations", len(row), len(dest))
	}
	for i, d := range dest {
		v := row[i]
		if v == nil {
			return fmt.Errorf("value %d is NULL", i)
		}
		switch d := d.(type) {
		case *string:
			*d = string(v)
		case *bool:
			*d = string(v) == "t"
		case *int64:
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return err
			}
			*d = n
		default:
			return fmt.Errorf("cannot scan into %T", d)
		}
	}
	return nil
}

// alterTry is how long one try of a schema change waits for its table's
// lock, and so at most how long a reader queues behind it.
const alterTry = time.Second

// alterSavepoint names the savepoint each try of a schema change runs under.
const alterSavepoint = "idemport_alter"

// alter runs stmt, an ALTER TABLE, inside tx. Its lock (ACCESS EXCLUSIVE)
// must wait for every transaction using the table, and while it waits
// every later statement on the table, a plain SELECT too, queues behind
// it: behind a transaction that does not end (a frozen import), readers
// would wait for ever. So each try waits at most alterTry (lock_timeout,
// under a savepoint, which a timed-out try is rolled back to), letting the
// queue through between tries, until the session's own lock_timeout (the
// busy timeout) has passed; then it fails with that try's lock_not_available
// (Locked). A session without a lock_timeout tries until ctx ends.
func alter(ctx context.Context, tx *sql.Tx, stmt string) error {
	var setting string
	var budgetMs int64
	if err := tx.QueryRowContext(ctx, `SELECT current_setting('lock_timeout'), setting::bigint FROM pg_settings WHERE name = 'lock_timeout'`).Scan(&setting, &budgetMs); err != nil {
		return fmt.Errorf("read lock_timeout: %w", err)
	}
	budget := time.Duration(budgetMs) * time.Millisecond
	try := alterTry
	if budget > 0 {
		try = min(try, budget)
	}
	start := time.Now()
	for {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT `+alterSavepoint); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", try.Milliseconds())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, stmt)
		if err == nil {
			if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT `+alterSavepoint); err != nil {
				return err
			}
			// The try's lock_timeout outlives the savepoint: back to the session's.
			_, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', $1, true)`, setting)
			return err
		}
		if !lockNotAvailable(err) || (budget > 0 && time.Since(start) >= budget) || ctx.Err() != nil {
			return err
		}
		// ROLLBACK TO also undoes the try's lock_timeout.
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT `+alterSavepoint); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT `+alterSavepoint); err != nil {
			return err
		}
	}
}
