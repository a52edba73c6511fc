package mysql

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/idemport/idemport/sink"
)

// TestSharedOperations: the target operations this driver takes from
// stdsql as they are work on MariaDB: savepoints, CountFile,
// ForgetOrdinals, and a snapshot's soft sweep of an ordinal scope (count,
// mark, unmark) on a table with the lineage and deletion columns.
func TestSharedOperations(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE t ("_idemport_file" BIGINT NOT NULL, "_idemport_row" BIGINT, region VARCHAR(8), v BIGINT,
		"_idemport_deleted_at" DATETIME(6), UNIQUE (v))`,
		`INSERT INTO t VALUES (7, 1, 'eu', 1, NULL), (7, 2, 'eu', 2, NULL), (8, 1, 'eu', 3, NULL), (8, 2, 'us', 4, NULL)`)
	ctx, d := t.Context(), Driver{}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()

	if err := d.Savepoint(ctx, tx, "sp"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (9, 1, 'eu', 1, NULL)`); err == nil {
		t.Fatal("a duplicate v went in")
	}
	if err := d.RollbackToSavepoint(ctx, tx, "sp"); err != nil {
		t.Fatal(err)
	}
	if err := d.ReleaseSavepoint(ctx, tx, "sp"); err != nil {
		t.Fatal(err)
	}

	if n, err := d.CountFile(ctx, tx, "t", 7); n != 2 || err != nil {
		t.Errorf("CountFile: %d, %v; want 2", n, err)
	}
	// File 7's scope eu, swept by file 8: file 8's rows stay.
	s := sink.Sweep{Driver: d, Table: "t", FileKey: 8, Scope: []sink.Term{{Column: "region", Value: "eu"}}, Soft: true}
	missing, live, err := d.SweepCount(ctx, tx, s)
	if missing != 2 || live != 3 || err != nil {
		t.Errorf("SweepCount: %d missing of %d live (%v), want 2 of 3", missing, live, err)
	}
	mark := time.Date(2026, 12, 2, 4, 0, 0, 123456000, time.UTC)
	if n, err := d.SweepApply(ctx, tx, s, d.TimeValue(mark)); n != 2 || err != nil {
		t.Errorf("SweepApply: %d, %v; want 2 marked", n, err)
	}
	if n, err := d.SweepLive(ctx, tx, s); n != 1 || err != nil {
		t.Errorf("SweepLive after the sweep: %d, %v; want 1", n, err)
	}
	if n, err := d.SweepUnmark(ctx, tx, s, d.TimeValue(mark)); n != 2 || err != nil {
		t.Errorf("SweepUnmark: %d, %v; want the 2 marks cleared", n, err)
	}
	if n, err := d.ForgetOrdinals(ctx, tx, "t", 7); n != 2 || err != nil {
		t.Errorf("ForgetOrdinals: %d, %v; want 2", n, err)
	}
	if n, err := d.CountFile(ctx, tx, "t", 7); n != 2 || err != nil {
		t.Errorf("CountFile after ForgetOrdinals: %d, %v; want the file's 2 rows still", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var rows, nullRows, marks int
	if err := db.QueryRow(`SELECT count(*), sum("_idemport_row" IS NULL), sum("_idemport_deleted_at" IS NOT NULL) FROM t`).Scan(&rows, &nullRows, &marks); err != nil {
		t.Fatal(err)
	}
	if rows != 4 || nullRows != 2 || marks != 0 {
		t.Errorf("%d rows, %d without ordinal, %d marked; want 4, 2, 0", rows, nullRows, marks)
	}
}

// TestHardSweep: a hard sweep deletes the rows of its scope that the
// file does not have: in ordinal mode those another file wrote, by key
// those whose key the seen table lacks.
func TestHardSweep(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE o ("_idemport_file" BIGINT NOT NULL, "_idemport_row" BIGINT NOT NULL, region VARCHAR(8), PRIMARY KEY ("_idemport_file", "_idemport_row"))`,
		`INSERT INTO o VALUES (7, 1, 'eu'), (7, 2, 'us'), (8, 1, 'eu')`,
		`CREATE TABLE n (a VARCHAR(8) NOT NULL, b BIGINT NOT NULL, region VARCHAR(8), PRIMARY KEY (a, b))`,
		`INSERT INTO n VALUES ('x', 1, 'eu'), ('x', 2, 'eu'), ('y', 1, 'eu'), ('z', 1, 'us')`,
		`CREATE TABLE seen (ordinal BIGINT PRIMARY KEY, a VARCHAR(8), b BIGINT)`,
		`INSERT INTO seen VALUES (1, 'x', 2), (2, 'y', 1)`)
	ctx, d := t.Context(), Driver{}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	eu := []sink.Term{{Column: "region", Value: "eu"}}
	if n, err := d.SweepApply(ctx, tx, sink.Sweep{Driver: d, Table: "o", FileKey: 8, Scope: eu}, nil); n != 1 || err != nil {
		t.Errorf("ordinal sweep: %d, %v; want file 7's eu row deleted", n, err)
	}
	if n, err := d.SweepApply(ctx, tx, sink.Sweep{Driver: d, Table: "n", Key: []string{"a", "b"}, Seen: "seen", Scope: eu}, nil); n != 1 || err != nil {
		t.Errorf("sweep by key: %d, %v; want (x, 1) deleted", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]string{"o": "7/2/us,8/1/eu", "n": "x/2/eu,y/1/eu,z/1/us"} {
		cols := `"_idemport_file" || '/' || "_idemport_row"`
		if table == "n" {
			cols = `a || '/' || b`
		}
		row := cols + ` || '/' || region`
		var got string
		if err := db.QueryRow(`SELECT group_concat(` + row + ` ORDER BY ` + row + ` SEPARATOR ',') FROM ` + table).Scan(&got); err != nil || got != want {
			t.Errorf("%s after the sweep: %s (%v), want %s", table, got, err, want)
		}
	}
}

// TestSweepKeys: SweepKeys reads the keys of the live rows of a scope as
// text, decimals as written and a soft sweep's deleted rows left out.
func TestSweepKeys(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE n (a VARCHAR(8) NOT NULL, b DECIMAL(10,2) NOT NULL, region VARCHAR(8), "_idemport_deleted_at" DATETIME(6), PRIMARY KEY (a, b))`,
		`INSERT INTO n VALUES ('x', 1.5, 'eu', NULL), ('y', 2, 'eu', '2026-01-01'), ('z', 3, 'us', NULL), ('w', 4, 'eu', NULL)`)
	d := Driver{}
	var got []string
	err := d.SweepKeys(t.Context(), db, sink.Sweep{Driver: d, Table: "n", Key: []string{"a", "b"}, Soft: true,
		Scope: []sink.Term{{Column: "region", Value: "eu"}}}, func(key []sql.NullString) error {
		got = append(got, key[0].String+"/"+key[1].String)
		return nil
	})
	slices.Sort(got)
	if want := []string{"w/4.00", "x/1.50"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("keys %q (%v), want %q", got, err, want)
	}
}
