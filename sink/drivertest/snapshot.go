package drivertest

import (
	"database/sql"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// upTo is a driver whose ledger migrations stop at version last: a ledger
// as an earlier version left it.
type upTo struct {
	sink.Driver
	last int
}

func (d upTo) Migrations(component string) (fs.FS, error) {
	fsys, err := d.Driver.Migrations(component)
	if err != nil || component != "ledger" {
		return fsys, err
	}
	return filtered{fsys, d.last}, nil
}

// Earlier returns d as an earlier version of idemport had it: its ledger
// migrations stop at version last (the checkpoints' are all there).
func Earlier(d sink.Driver, last int) sink.Driver { return upTo{d, last} }

// filtered lists only the migrations of fsys numbered up to last.
type filtered struct {
	fs.FS
	last int
}

func (f filtered) ReadDir(name string) ([]fs.DirEntry, error) {
	all, err := fs.ReadDir(f.FS, name)
	if err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	for _, e := range all {
		if v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0]); err == nil && v <= f.last {
			out = append(out, e)
		}
	}
	return out, nil
}

// ledgerSnapshots: the record of the last snapshot an earlier ledger kept
// per scope survives the migration that records every snapshot applied;
// the current snapshot of a scope is the latest as-of among those
// recorded, under any spelling of the scope; forgetting one (an undo)
// makes the one before it current; applying one again replaces its record;
// and the rows a scope held before an operation are stored once, until the
// operation is reset.
func ledgerSnapshots(t *testing.T, open func(t *testing.T) Store) {
	st := open(t)
	f := &ledgerFx{t: t, ctx: t.Context(), st: st, l: ledger.New(st.DB, upTo{st.Driver, 11}, st.Prefix)}
	if err := f.l.Migrate(f.ctx); err != nil {
		t.Fatalf("migrate the ledger to version 11: %v", err)
	}
	ins := st.Driver.Rebind(`INSERT INTO ` + st.Prefix + `snapshots (table_name, scope, as_of, file_id, applied_at) VALUES (?, ?, ?, ?, ?)`)
	if _, err := st.DB.ExecContext(f.ctx, ins, "items", "a=x&b=2", 100, "f0", 1); err != nil {
		t.Fatalf("record a snapshot as version 11 did: %v", err)
	}
	f.l = ledger.New(st.DB, st.Driver, st.Prefix)
	if err := f.l.Migrate(f.ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	last := func(want string, scopes ...string) *ledger.Snapshot {
		t.Helper()
		s, err := f.l.LastSnapshot(f.ctx, st.DB, "items", scopes...)
		if err != nil {
			t.Fatalf("last snapshot: %v", err)
		}
		got := "none"
		if s != nil {
			got = fmt.Sprintf("%s@%d", s.FileID, s.AsOf)
		}
		if got != want {
			t.Fatalf("last snapshot of %q: %s, want %s", scopes, got, want)
		}
		return s
	}
	last("f0@100", "a=x&b=2")
	last("f0@100", "a=x%26b%3D2", "a=x&b=2") // the scope spelt as now, and as before
	last("none", "a=x%26b%3D2")
	record := func(file string, asOf, mark int64) {
		t.Helper()
		if err := f.tx(func(tx *sql.Tx) error {
			return f.l.RecordSnapshot(f.ctx, tx, "items", "a=x%26b%3D2", asOf, file, mark)
		}); err != nil {
			t.Fatalf("record %s: %v", file, err)
		}
	}
	record("f1", 200, 0)
	record("f2", 300, 1_700_000_000_123_456)
	if s := last("f2@300", "a=x%26b%3D2", "a=x&b=2"); s.MarkedAt != 1_700_000_000_123_456 || s.Scope != "a=x%26b%3D2" {
		t.Errorf("f2 recorded as %+v", s)
	}
	if s, err := f.l.SnapshotOf(f.ctx, st.DB, "items", "f1"); err != nil || s == nil || s.AsOf != 200 || s.MarkedAt != 0 {
		t.Errorf("snapshot of f1: %+v, %v", s, err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.ForgetSnapshot(f.ctx, tx, "items", "f2") }); err != nil {
		t.Fatal(err)
	}
	last("f1@200", "a=x%26b%3D2", "a=x&b=2")
	if s, err := f.l.SnapshotOf(f.ctx, st.DB, "items", "f2"); err != nil || s != nil {
		t.Errorf("snapshot of forgotten f2: %+v, %v", s, err)
	}
	record("f1", 200, 0) // applied again
	if n := len(Strings(t, st.DB, st.Driver.Rebind(`SELECT file_id FROM `+st.Prefix+`snapshots WHERE file_id = ?`), "f1")); n != 1 {
		t.Errorf("f1 applied twice has %d records, want 1", n)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.ForgetSnapshot(f.ctx, tx, "items", "f1") }); err != nil {
		t.Fatal(err)
	}
	last("f0@100", "a=x%26b%3D2", "a=x&b=2")

	id := identity()
	f.create(id, attempt("a1"))
	rows := func(want string) {
		t.Helper()
		n, ok, err := f.l.ScopeRows(f.ctx, st.DB, id.Key)
		if got := fmt.Sprintf("%d %v", n, ok); err != nil || got != want {
			t.Fatalf("rows in scope before: %s (%v), want %s", got, err, want)
		}
	}
	rows("0 false")
	for _, n := range []int64{4, 9} {
		if err := f.tx(func(tx *sql.Tx) error { return f.l.RecordScopeRows(f.ctx, tx, id.Key, n) }); err != nil {
			t.Fatal(err)
		}
		rows("4 true") // the first count stays
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.Reset(f.ctx, tx, id.Key) }); err != nil {
		t.Fatal(err)
	}
	rows("0 false")
	if n, ok, err := f.l.ScopeRows(f.ctx, st.DB, ledger.Key{Table: "items", FileID: "unknown"}); err != nil || ok || n != 0 {
		t.Errorf("rows in scope of an unknown operation: %d %v %v", n, ok, err)
	}

	// The attempt's sweeps add up; its schema changes are recorded as
	// said, another attempt's left alone.
	f.create(ledger.Identity{Key: ledger.Key{Table: "items", FileID: "file-2"}, FileKey: 2, Mapping: "{}"}, attempt("a2"))
	for _, n := range []int64{3, 4_000_000_000} {
		if err := f.tx(func(tx *sql.Tx) error { return f.l.Swept(f.ctx, tx, "a1", n) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.SchemaChanged(f.ctx, tx, "a1", "added note text") }); err != nil {
		t.Fatal(err)
	}
	as := f.attempts(id.Key)
	if len(as) != 1 || as[0].Deleted != 4_000_000_003 || as[0].SchemaChanges != "added note text" {
		t.Errorf("the attempt that swept and evolved: %s", attemptsText(as))
	}
	if as := f.attempts(ledger.Key{Table: "items", FileID: "file-2"}); len(as) != 1 || as[0].Deleted != 0 || as[0].SchemaChanges != "" {
		t.Errorf("another attempt: %s", attemptsText(as))
	}
}

// attemptsText renders what the ledger's attempt records hold of their
// work (an AttemptRecord prints as its Key).
func attemptsText(as []ledger.AttemptRecord) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%s: %s %q rows %+v partitions %+v deleted %d schema %q", a.ID, a.Outcome, a.Error, a.Rows, a.Partitions, a.Deleted, a.SchemaChanges))
	}
	return strings.Join(out, "; ")
}

// ledgerCreatedTables checks the record of the tables an operation created
// (where DDL commits apart from rows): recorded once, per operation,
// marked planned, counted for others, forgotten one by one.
func ledgerCreatedTables(t *testing.T, open func(t *testing.T) Store) {
	f := newLedger(t, open)
	st := f.st
	a, b := ledger.Key{Table: "items", FileID: "f1"}, ledger.Key{Table: "items", FileID: "f2"}
	created := func(k ledger.Key, want string) {
		t.Helper()
		cs, err := f.l.Created(f.ctx, st.DB, k)
		var got []string
		for _, c := range cs {
			got = append(got, fmt.Sprintf("%s:%v", c.Name, c.Planned))
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Fatalf("tables %s created: %q (%v), want %q", k, strings.Join(got, " "), err, want)
		}
	}
	created(a, "")
	for _, name := range []string{"items", "stage_1", "items"} { // recorded once
		if err := f.tx(func(tx *sql.Tx) error { return f.l.RecordCreated(f.ctx, tx, a, name) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.RecordCreated(f.ctx, tx, b, "items") }); err != nil {
		t.Fatal(err)
	}
	created(a, "items:false stage_1:false")
	if err := f.tx(func(tx *sql.Tx) error { return f.l.PlanCreated(f.ctx, tx, a) }); err != nil {
		t.Fatal(err)
	}
	created(a, "items:true stage_1:true")
	created(b, "items:false")
	for k, want := range map[ledger.Key]int64{a: 1, b: 1} {
		if n, err := f.l.CreatedByOthers(f.ctx, st.DB, k, "items"); err != nil || n != want {
			t.Errorf("others than %s that created items: %d (%v), want %d", k, n, err, want)
		}
	}
	if n, err := f.l.CreatedByOthers(f.ctx, st.DB, b, "stage_1"); err != nil || n != 1 {
		t.Errorf("others than %s that created stage_1: %d (%v), want 1", b, n, err)
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.ForgetCreated(f.ctx, tx, a, "items") }); err != nil {
		t.Fatal(err)
	}
	created(a, "stage_1:true")
	if n, err := f.l.CreatedByOthers(f.ctx, st.DB, b, "items"); err != nil || n != 0 {
		t.Errorf("others than %s that created items, once forgotten: %d (%v)", b, n, err)
	}
	// Moved to the past operations (a new operation for b follows it),
	// b forgets that it created its target table once planned: the new
	// one did not create it. An unplanned record stays (the next attempt
	// drops that table before it plans), and so do those of other tables.
	replace := func() {
		t.Helper()
		if err := f.tx(func(tx *sql.Tx) error { return f.l.Replace(f.ctx, tx, b, "") }); err != nil {
			t.Fatal(err)
		}
	}
	replace()
	created(b, "items:false")
	for _, name := range []string{"items", "stage_2"} {
		if err := f.tx(func(tx *sql.Tx) error { return f.l.RecordCreated(f.ctx, tx, b, name) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.tx(func(tx *sql.Tx) error { return f.l.PlanCreated(f.ctx, tx, b) }); err != nil {
		t.Fatal(err)
	}
	replace()
	created(b, "stage_2:true")
	created(a, "stage_1:true")
}
