package drivertest

import (
	"slices"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// ---- target operations: savepoints, dropping a table ---------------------

// savepointUndoesAWrite: a write rolled back to the savepoint before it
// leaves nothing, the transaction goes on, and a write released under a
// savepoint commits with it.
func savepointUndoesAWrite(t *testing.T, f *Fx) {
	tg := sink.Target{Table: "sp", Key: []string{"id"}}
	f.MustEnsure(tg, named)
	w := f.Writer(tg, named)
	tx, err := f.Conn.BeginTx(f.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	d := f.Env.Driver
	if err := d.Savepoint(f.Ctx, tx, "idemport_test"); err != nil {
		t.Fatal(err)
	}
	f.WriteIn(tx, w, 1, Batch(t, named, []any{1, "a"}, []any{2, "b"}), Seq(1, 2))
	if err := d.RollbackToSavepoint(f.Ctx, tx, "idemport_test"); err != nil {
		t.Fatal(err)
	}
	if err := d.ReleaseSavepoint(f.Ctx, tx, "idemport_test"); err != nil {
		t.Fatal(err)
	}
	if err := d.Savepoint(f.Ctx, tx, "idemport_test"); err != nil {
		t.Fatal(err)
	}
	WantRows(t, "after the rollback to the savepoint", f.WriteIn(tx, w, 1, Batch(t, named, []any{3, "c"}), Seq(3, 3)), idemtype.Rows{Read: 1, Inserted: 1})
	if err := d.ReleaseSavepoint(f.Ctx, tx, "idemport_test"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	WantTable(t, "sp", f.Table("sp", "id", "id", "name"), "3|'c'")
}

// dropTableIfExists: DropTable drops a table, and a table that does not
// exist is no error.
func dropTableIfExists(t *testing.T, f *Fx) {
	f.MustEnsure(sink.Target{Table: "gone", Key: []string{"id"}}, named)
	for _, name := range []string{"gone", "never"} {
		tx, err := f.Conn.BeginTx(f.Ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Env.Driver.DropTable(f.Ctx, tx, name); err != nil {
			tx.Rollback()
			t.Fatalf("drop %s: %v", name, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.Env.Driver.TableExists(f.Ctx, f.Conn, name); err != nil || ok {
			t.Errorf("%s after DropTable: exists %v (%v)", name, ok, err)
		}
	}
}

// tablesByPrefix: Tables lists the tables whose name begins with one of
// the prefixes, schema-qualified where the database has schemas, and
// reads a prefix's _ and % as themselves.
func tablesByPrefix(t *testing.T, f *Fx) {
	for _, name := range []string{"st_a", "st_b", "seen_c", "stxd", "other"} {
		f.MustEnsure(sink.Target{Table: name, Key: []string{"id"}}, named)
	}
	d := f.Env.Driver
	schema, err := d.CurrentSchema(f.Ctx, f.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if schema != "" {
		schema += "."
	}
	got, err := d.Tables(f.Ctx, f.Conn, "st_", "seen_")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{schema + "seen_c", schema + "st_a", schema + "st_b"}; !slices.Equal(got, want) {
		t.Errorf("tables: %q, want %q", got, want)
	}
}
