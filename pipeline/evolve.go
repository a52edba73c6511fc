package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// The --evolve modes: what an import may change in an existing table that
// does not fit its file. Evolve is part of the mapping.
const (
	EvolveNone  = ""      // change nothing: a file that does not fit is refused before any effect
	EvolveAdd   = "add"   // add the file's new columns, nullable
	EvolveWiden = "widen" // also widen columns along int64 → decimal → text and float64 → text
)

// ParseEvolve reads an --evolve value.
func ParseEvolve(s string) (string, error) {
	switch s {
	case "", "none":
		return EvolveNone, nil
	case EvolveAdd, EvolveWiden:
		return s, nil
	}
	return "", fmt.Errorf("--evolve %q: want none, add or widen", s)
}

// widening is a column widened to a kind.
type widening struct {
	column string
	kind   idemtype.Type
}

// evolution is the schema changes a file needs of an existing table.
type evolution struct {
	add   []arrow.Field
	widen []widening
	text  string // the changes in words, for history and the result
}

// evolve returns the changes table, the table of target, needs to take
// rows of schema under --evolve mode (Mapping.Evolve) in a database of
// limits lim, or an error naming every difference that remains (the file
// is then refused before any effect). A nil table (it does not exist yet)
// needs none. A key column the database cannot widen (Limits.FixedKeys) is
// such a difference: widening it would fail every attempt.
func evolve(mode string, lim sink.Limits, target sink.Target, table *sink.Table, schema *arrow.Schema) (*evolution, error) {
	if table == nil {
		return &evolution{}, nil
	}
	ev := &evolution{}
	after := *table
	after.Columns = append([]sink.Column{}, table.Columns...)
	var words, fixed []string
	for _, f := range schema.Fields() {
		k := idemtype.TypeOf(f)
		c := after.Column(f.Name)
		if c != nil && fixedKey(lim, table, f.Name) {
			if _, ok := sink.Widen(c.Kind, k); ok {
				fixed = append(fixed, fmt.Sprintf("%q", f.Name))
				continue
			}
		}
		switch {
		case c == nil && mode != EvolveNone:
			ev.add = append(ev.add, f)
			after.Columns = append(after.Columns, sink.Column{Name: f.Name, Kind: k})
			words = append(words, fmt.Sprintf("added %s (%s)", f.Name, k))
		case c != nil && mode == EvolveWiden:
			if to, ok := sink.Widen(c.Kind, k); ok {
				ev.widen = append(ev.widen, widening{f.Name, to})
				name := to.String()
				if to == idemtype.String {
					name = "text"
				}
				words = append(words, fmt.Sprintf("widened %s %s → %s", f.Name, c.Kind, name))
				c.Kind, c.SQLType = to, to.String()
			}
		}
	}
	if err := sink.Check(&after, target, schema); err != nil {
		// Propose the mode that makes the table fit, and only one that does.
		hint := "; nothing was written; --evolve cannot make this table fit (it never changes a key, narrows or drops a column): import into another table (--table NAME)"
		switch {
		case mode == EvolveNone && evolvedFits(table, lim, target, schema, EvolveAdd):
			hint = "; nothing was written; rerun with --evolve add to add the file's new columns"
		case mode != EvolveWiden && evolvedFits(table, lim, target, schema, EvolveWiden):
			hint = "; nothing was written; rerun with --evolve widen to add the file's new columns and widen int64 → decimal → text, float64 → text"
		case len(fixed) > 0:
			hint = fmt.Sprintf("; nothing was written; --evolve cannot make this table fit: column %s is part of a key, whose type this database cannot widen: import into another table (--table NAME)", strings.Join(fixed, ", "))
		}
		return nil, &unfitError{check: err, hint: hint}
	}
	ev.text = strings.Join(words, ", ")
	return ev, nil
}

// fixedKey reports whether column of table is part of one of its keys and
// the database cannot widen such a column (Limits.FixedKeys).
func fixedKey(lim sink.Limits, table *sink.Table, column string) bool {
	return lim.FixedKeys && slices.ContainsFunc(table.Keys, func(k []string) bool { return slices.Contains(k, column) })
}

// evolvedFits reports whether table, evolved by mode for schema in a
// database of limits lim, would fit the file (sink.Check).
func evolvedFits(table *sink.Table, lim sink.Limits, t sink.Target, schema *arrow.Schema, mode string) bool {
	after := *table
	after.Columns = append([]sink.Column{}, table.Columns...)
	for _, f := range schema.Fields() {
		k := idemtype.TypeOf(f)
		c := after.Column(f.Name)
		switch {
		case c == nil:
			after.Columns = append(after.Columns, sink.Column{Name: f.Name, Kind: k})
		case mode == EvolveWiden && !fixedKey(lim, table, f.Name):
			if to, ok := sink.Widen(c.Kind, k); ok {
				c.Kind, c.SQLType = to, to.String()
			}
		}
	}
	return sink.Check(&after, t, schema) == nil
}

// apply makes the changes inside tx and records them with the attempt:
// without --atomic in the transaction of the first partition to find the
// table not fitting (partitionWriter.prepare), with --atomic in the one
// that completes the operation (evolveAtCompletion). report adds them to
// the run's result once that transaction commits.
func (ev *evolution) apply(ctx context.Context, a *applier, tx *sql.Tx) error {
	if ev == nil || ev.text == "" {
		return nil
	}
	e := a.e.st.Driver
	for _, f := range ev.add {
		if err := e.AddColumn(ctx, tx, a.target.Table, f); err != nil {
			return err
		}
	}
	for _, w := range ev.widen {
		if err := e.Widen(ctx, tx, a.target.Table, w.column, w.kind); err != nil {
			return err
		}
	}
	return a.e.st.Ledger.SchemaChanged(ctx, tx, a.attempt.ID, ev.text)
}

// report adds the changes to the run's result.
func (ev *evolution) report(res *Result) {
	if ev == nil {
		return
	}
	for _, f := range ev.add {
		res.ColumnsAdded = append(res.ColumnsAdded, f.Name)
	}
	for _, w := range ev.widen {
		res.ColumnsWidened = append(res.ColumnsWidened, w.column)
	}
}

// evolvesInPartitions reports whether the partitions' transactions may
// have to change the target before writing to it: --evolve without
// --atomic. The plan changes nothing of an existing table; the first
// partition transaction to commit does, with its rows.
func (a *applier) evolvesInPartitions() bool {
	return a.req.Mapping.Evolve != EvolveNone && !a.req.Mapping.Atomic
}

// partitionWriter is a worker's writer of the target, prepared inside
// the worker's partition transactions (prepare) for the table's columns as
// each transaction holds them.
type partitionWriter struct {
	sink.Writer                 // nil until prepared
	table       *sink.Table     // the table as the Writer was prepared for
	version     string          // the table's columnsVersion then, or ""
	as          []idemtype.Type // the types it writes values as (valuesAs)
}

// columnsVersioner is a driver that tells, inside a transaction that
// holds a table's columns (Driver.HoldColumns), whether they may have
// changed since it last looked, for less than a Describe: version
// differs from the one before whenever the columns or keys a Describe
// reads differ (it may differ with none changed), and is "" for a table
// that does not exist.
type columnsVersioner interface {
	ColumnsVersion(ctx context.Context, tx *sql.Tx, table string) (version string, err error)
}

// lazyCommitter is a driver whose partition transactions may commit
// without waiting for the database's log to reach the disk, because a
// later commit that waits makes them durable, in their order, and a crash
// before it loses each partition's rows together with its done mark
// (docs/internals.md, "PostgreSQL: partition commits that do not wait
// for the disk"). Only partition transactions (prepare), the claim that
// takes the operation (claimer.claim) and the plan's (keeper.storePlan)
// call it, never the transaction that completes the operation, records a
// refusal or ends the attempt, nor any whose commit is reported or acted
// on outside the database.
type lazyCommitter interface {
	CommitLazily(ctx context.Context, tx *sql.Tx) error
}

// partitionOpener is a driver that does at once what a partition
// transaction does first where the worker's Writer needs no schema change:
// commit lazily (lazyCommitter), hold the table's columns
// (Driver.HoldColumns) and return their version (columnsVersioner), in
// that order, inside the transaction open on conn: one round trip where
// there were three.
type partitionOpener interface {
	OpenPartition(ctx context.Context, conn *sql.Conn, table string) (version string, err error)
}

// columnsHolder is a driver that holds a table's columns
// (Driver.HoldColumns) and returns their version (columnsVersioner) at
// once, inside the transaction open on conn: one round trip where there
// were two, changing nothing else of the transaction.
type columnsHolder interface {
	HoldColumnsVersion(ctx context.Context, conn *sql.Conn, table string) (version string, err error)
}

// describedWriter is a driver whose Writer may be prepared for the table
// as its Describe, in the transaction that holds the table's columns,
// returned it: the Writer then does not describe the table again, one
// round trip fewer for each writer prepared.
type describedWriter interface {
	WriterFor(ctx context.Context, conn *sql.Conn, tg sink.Target, schema *arrow.Schema, table *sink.Table) (sink.Writer, error)
}

// connEnsurer is a driver whose Ensure takes fewer round trips given the
// connection the transaction was begun on (PostgreSQL: the lock and the
// describe in one message). The overlap's transaction, the first of a new
// table's, ensures the table through it.
type connEnsurer interface {
	EnsureOn(ctx context.Context, conn *sql.Conn, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) error
}

// ensureHolder is a connEnsurer that also does, in the same message, what
// describingHolder does (not lazy), for a table found to exist: the
// overlap's transaction into an existing table ensures it, holds its
// columns and describes them in one round trip where it took two.
type ensureHolder interface {
	EnsureHeld(ctx context.Context, conn *sql.Conn, tx *sql.Tx, tg sink.Target, schema *arrow.Schema) (string, *sink.Table, error)
}

// describingHolder is a driver that does what partitionOpener (lazy) or
// columnsHolder (not) does and describes the table (Driver.Describe,
// after the lock) in the same message: what a transaction that prepares
// its writer needs, in one round trip where it took two.
type describingHolder interface {
	HoldColumnsDescribed(ctx context.Context, conn *sql.Conn, table string, lazy bool) (string, *sink.Table, error)
}

// prepare readies w inside tx, a partition transaction begun on conn,
// before the partition's first row is written, and returns the schema
// changes tx made, for the result once tx commits.
//
// Another import may change the table's columns between two partitions
// of this one (its --evolve adds a column or widens one this file writes),
// so every partition transaction holds the table's columns until it ends
// (Driver.HoldColumns) and describes them, or learns from the driver that
// they have not changed since the Writer was prepared (columnsVersioner):
// a Writer prepared for other columns (an int64 column that is now numeric
// or text) would write the rows in the old column's form, which the new
// type reads as other values or refuses. It is prepared again for the columns as they are.
//
// With --evolve (evolvesInPartitions) the worker's first partition
// transaction also changes a table that does not fit the file yet, under
// a lock held until tx ends, so that of several workers (or runs) the
// first to take it changes the table and the others, taking it after that
// one committed, find the table changed and change nothing. Changes only
// add or widen: a table that fits the file keeps fitting it.
//
// A partition transaction commits without waiting for the log's flush
// where the driver allows it (lazyCommitter): nothing outside the
// database acts on a partition's commit before the operation's completing
// transaction, which waits, commits.
func (w *partitionWriter) prepare(ctx context.Context, a *applier, conn *sql.Conn, tx *sql.Tx) (*evolution, error) {
	evolve := w.Writer == nil && a.evolvesInPartitions()
	if h, ok := a.e.st.Driver.(describingHolder); ok && !evolve && w.Writer == nil {
		version, table, err := h.HoldColumnsDescribed(ctx, conn, a.tables.write.Table, true)
		if err != nil {
			return nil, err
		}
		return nil, w.readyFor(ctx, a, conn, version, table)
	}
	if o, ok := a.e.st.Driver.(partitionOpener); ok && !evolve {
		version, err := o.OpenPartition(ctx, conn, a.tables.write.Table)
		if err != nil {
			return nil, err
		}
		return nil, w.readyAt(ctx, a, conn, tx, version, true)
	}
	if l, ok := a.e.st.Driver.(lazyCommitter); ok {
		if err := l.CommitLazily(ctx, tx); err != nil {
			return nil, err
		}
	}
	var ev *evolution
	if evolve {
		var err error
		if ev, err = a.evolveInPartition(ctx, tx); err != nil {
			return nil, err
		}
	}
	if err := w.ready(ctx, a, conn, tx); err != nil {
		return nil, err
	}
	return ev, nil
}

// evolveInPartition changes the table, for the worker's first partition
// transaction tx, where it does not fit the file yet (see prepare).
func (a *applier) evolveInPartition(ctx context.Context, tx *sql.Tx) (*evolution, error) {
	if a.e.st.DDLCommits() {
		// The DDL commits: it runs apart, before tx writes (evolveApart),
		// and tx records it.
		ev, err := a.evolveApart(ctx)
		if err == nil {
			err = a.recordEvolved(ctx, tx, ev)
		}
		return ev, err
	}
	schema := a.plan.Schema.Arrow()
	ev, err := a.evolveTarget(ctx, tx, schema, false)
	if err == nil && ev.text != "" {
		// A table found fitting needs no lock. One that does not is
		// looked at again under it.
		if err = a.e.st.Driver.LockTable(ctx, tx, "evolve", a.target.Table); err == nil {
			ev, err = a.evolveTarget(ctx, tx, schema, true)
		}
	}
	return ev, err
}

// ready holds the table's columns until tx ends and prepares w for them,
// again when they changed since it was last prepared (see prepare). A
// driver that tells cheaply whether they may have changed
// (columnsVersioner) is asked that first, and the table described only
// when they may have; one that holds the columns and tells their version
// at once (columnsHolder) is asked both in one round trip, and the table
// described in it too where w has no writer yet (describingHolder).
func (w *partitionWriter) ready(ctx context.Context, a *applier, conn *sql.Conn, tx *sql.Tx) error {
	tg := a.tables.write
	if h, ok := a.e.st.Driver.(describingHolder); ok && w.Writer == nil {
		version, table, err := h.HoldColumnsDescribed(ctx, conn, tg.Table, false)
		if err != nil {
			return err
		}
		return w.readyFor(ctx, a, conn, version, table)
	}
	if h, ok := a.e.st.Driver.(columnsHolder); ok {
		version, err := h.HoldColumnsVersion(ctx, conn, tg.Table)
		if err != nil {
			return err
		}
		return w.readyAt(ctx, a, conn, tx, version, true)
	}
	if err := a.e.st.Driver.HoldColumns(ctx, tx, tg.Table); err != nil {
		return err
	}
	var version string
	v, versioned := a.e.st.Driver.(columnsVersioner)
	if versioned {
		var err error
		if version, err = v.ColumnsVersion(ctx, tx, tg.Table); err != nil {
			return err
		}
	}
	return w.readyAt(ctx, a, conn, tx, version, versioned)
}

// readyAt is ready once the columns are held, version being their
// version when the driver tells it (versioned). The table is described
// once: a driver that prepares its Writer from that (describedWriter) is
// not asked to describe it again.
func (w *partitionWriter) readyAt(ctx context.Context, a *applier, conn *sql.Conn, tx *sql.Tx, version string, versioned bool) error {
	tg := a.tables.write
	if versioned && w.Writer != nil && version != "" && version == w.version {
		return nil
	}
	table, err := a.e.st.Driver.Describe(ctx, tx, tg.Table)
	if err != nil {
		return err
	}
	return w.readyFor(ctx, a, conn, version, table)
}

// readyFor is readyAt once the table is described: table as the
// transaction that holds its columns read it, version their version ("" when the driver
// tells none).
func (w *partitionWriter) readyFor(ctx context.Context, a *applier, conn *sql.Conn, version string, table *sink.Table) error {
	tg := a.tables.write
	if table == nil {
		return fmt.Errorf("write %s: no such table", tg.Table)
	}
	if w.Writer != nil && reflect.DeepEqual(table, w.table) {
		w.version = version
		return nil
	}
	if !a.req.Mapping.Atomic { // the staging table is the import's own; the target is checked at completion
		if err := a.fits(table); err != nil {
			return err
		}
	}
	as := valuesAs(a.req.Mapping, a.text, table, a.plan.Schema)
	a.ap.lastAs.Store(&as)
	if w.Writer != nil {
		a.log.Debug("the table's columns changed; preparing the writer again", "table", tg.Table)
		err := w.Close()
		w.Writer, w.table, w.version = nil, nil, ""
		if err != nil {
			return err
		}
	}
	schema := schemaAs(a.plan.Schema, as).Arrow()
	tg.Loose = a.plan.Loose && !tg.Ordinal()
	var err error
	if d, ok := a.e.st.Driver.(describedWriter); ok {
		w.Writer, err = d.WriterFor(ctx, conn, tg, schema, table)
	} else {
		w.Writer, err = a.e.st.Driver.Writer(ctx, conn, tg, schema)
	}
	if err != nil {
		return err
	}
	w.table, w.version, w.as = table, version, as
	return nil
}

// valuesAs returns the types the values of a text file's columns are
// written as into table (nil: each as the plan reads it, and for a file
// not read as text), m being the file's mapping. A column the
// plan reads as int64, float64 or decimal goes into a text column as the
// file's text, and one read as float64 into a decimal column as the number
// the file wrote, never through a float64: 4 stays 4 (not 4.0), 4.50 stays
// 4.50 (not 4.5), and 476316062747.79 stays that (not 4.7631606274779e+11).
// A Parquet or Arrow float has only its float64; the driver writes it as
// its shortest decimal text (sink.FloatText). Key, version and scope
// columns are read as the plan says: their types key the rows.
func valuesAs(m Mapping, text bool, table *sink.Table, schema reader.Schema) []idemtype.Type {
	if table == nil || !text {
		return nil
	}
	var as []idemtype.Type
	for i, c := range schema {
		t := table.Column(c.Name)
		if t == nil || slices.Contains(m.Key, c.Name) || c.Name == m.Version || (m.Snapshot != nil && slices.ContainsFunc(m.Snapshot.Scope, func(s sink.Term) bool { return s.Column == c.Name })) {
			continue
		}
		to := c.Type
		switch {
		case t.Kind == idemtype.String && (c.Type == idemtype.Int64 || c.Type == idemtype.Float64 || c.Type == idemtype.Decimal):
			to = idemtype.String
		case t.Kind == idemtype.Decimal && c.Type == idemtype.Float64:
			to = idemtype.Decimal
		}
		if to == c.Type {
			continue
		}
		if as == nil {
			as = make([]idemtype.Type, len(schema))
			for j, c := range schema {
				as[j] = c.Type
			}
		}
		as[i] = to
	}
	return as
}

// expectAs sets the types the first partitions are read as (lastAs) for
// the table as it is, or as the first partition transaction is to change
// it (--evolve): a partition read otherwise would be read again.
func (a *applier) expectAs(ctx context.Context) error {
	if !a.text || a.ap.lastAs.Load() != nil {
		return nil
	}
	table, err := a.e.st.Driver.Describe(ctx, a.e.st.DB, a.tables.write.Table)
	if err != nil || table == nil {
		return err
	}
	if a.evolvesInPartitions() {
		table = widened(a.req.Mapping.Evolve, a.e.st.Driver.Limits(), a.target, table, a.plan.Schema)
	}
	as := valuesAs(a.req.Mapping, a.text, table, a.plan.Schema)
	a.ap.lastAs.Store(&as)
	return nil
}

// widened returns table, the table of target in a database of limits lim,
// with the columns a file of schema widens (--evolve widen, as mode says)
// of the kinds they are widened to: as the transaction that changes it
// leaves it.
func widened(mode string, lim sink.Limits, target sink.Target, table *sink.Table, schema reader.Schema) *sink.Table {
	ev, err := evolve(mode, lim, target, table, schema.Arrow())
	if err != nil || len(ev.widen) == 0 {
		return table
	}
	after := *table
	after.Columns = slices.Clone(table.Columns)
	for _, w := range ev.widen {
		if c := after.Column(w.column); c != nil {
			c.Kind = w.kind
		}
	}
	return &after
}

// schemaAs returns s with the types as gives (s itself when as is nil):
// the schema of the batches a partition read with them has.
func schemaAs(s reader.Schema, as []idemtype.Type) reader.Schema {
	if as == nil {
		return s
	}
	s = slices.Clone(s)
	for i := range s {
		s[i].Type = as[i]
	}
	return s
}

// evolveTarget returns the changes the target, as tx sees it, needs to
// take rows of schema; with change it also makes them inside tx, records
// them, and checks the table (Ensure) as the plan does for one that fits.
func (a *applier) evolveTarget(ctx context.Context, tx *sql.Tx, schema *arrow.Schema, change bool) (*evolution, error) {
	table, err := a.e.st.Driver.Describe(ctx, tx, a.target.Table)
	if err != nil {
		return nil, err
	}
	ev, err := evolve(a.req.Mapping.Evolve, a.e.st.Driver.Limits(), a.target, table, schema)
	if err != nil || !change {
		return ev, err
	}
	if err := ev.apply(ctx, a, tx); err != nil {
		return nil, err
	}
	return ev, a.e.st.Driver.Ensure(ctx, tx, a.target, schema)
}

// evolveAtCompletion makes, for an --atomic import, the schema changes its
// file needs of the target inside the completing transaction, before the
// staged rows are moved, so readers see new and widened columns together
// with the rows, or neither. The changes are computed again from the table
// as it is then (another import may have changed it since the plan) and
// recorded with the attempt that completes the operation; it returns them.
func (a *applier) evolveAtCompletion(ctx context.Context, tx *sql.Tx, apart *evolution) (*evolution, error) {
	if !a.req.Mapping.Atomic {
		return nil, nil
	}
	if a.e.st.DDLCommits() {
		// Made before tx began (completionDDL): recorded here.
		return apart, a.recordEvolved(ctx, tx, apart)
	}
	return a.evolveTarget(ctx, tx, a.plan.Schema.Arrow(), true)
}
