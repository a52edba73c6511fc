package pipeline

import (
	"context"
	"database/sql"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
)

// On a database whose DDL commits the transaction it runs in (MariaDB,
// MySQL: store.Store.DDLCommits), no DDL runs inside a transaction of
// rows. Each DDL step of an import runs alone, before the transaction
// that needs it, and is idempotent (IF NOT EXISTS), so that a kill
// between the step and that transaction is resumed by a rerun:
//
//   - the plan's tables (planDDL): the target when new, --atomic's
//     staging table, the snapshot's table of keys seen, the lineage and
//     deletion mark columns, before the plan's transaction. A table that
//     did not exist is recorded in the ledger as the operation's first
//     (store.Store.Create), and marked planned in the plan's transaction.
//     An attempt that plans finds the tables recorded but not planned, made
//     by an attempt killed before its plan committed, and drops them
//     (undoPlanDDL) before it plans, as a rollback would have: it then
//     plans, or refuses the file, as if they had never been made;
//   - --evolve's columns (evolveApart): added or widened before the first
//     partition's transaction, which records the change; with --atomic
//     before the completing transaction (completionDDL), so readers may
//     see the new columns, empty, before the rows;
//   - the drops of the staging table and the table of keys seen, after
//     the completing transaction commits (dropAfterCompletion); one a
//     kill leaves is dropped by gc;
//   - an abandoned import, or an undone one (pipeline/ops), drops the
//     tables its operation created, unless another operation holds rows
//     there (store.Store.DropCreated). A table that existed before the
//     operation is never dropped.
//
// Elsewhere (SQLite, PostgreSQL) each DDL step runs inside the
// transaction whose rows need it, as before.

// planDDL makes, one DDL step at a time, the tables and columns the plan's
// transaction would make elsewhere: the target (when ensure, as storePlan
// decides), the staging table of --atomic for staged, the deletion mark
// column of a soft snapshot and the table of keys seen.
func (kp *keeper) planDDL(ctx context.Context, ensure bool, schema, staged *arrow.Schema) error {
	st, k := kp.e.st, kp.id.Key
	if ensure {
		if err := st.Create(ctx, k, kp.target.Table, func(tx *sql.Tx) error {
			return st.Driver.Ensure(ctx, tx, kp.target, schema)
		}); err != nil {
			return err
		}
	}
	if kp.req.Mapping.Atomic {
		if err := st.Create(ctx, k, kp.tables.stage, func(tx *sql.Tx) error {
			return kp.ensureStage(ctx, tx, staged)
		}); err != nil {
			return err
		}
	}
	if s := kp.snapshot(); s != nil && s.Soft && !kp.req.Mapping.Atomic {
		if err := st.Alter(ctx, func(tx *sql.Tx) error { return st.Driver.EnsureDeleted(ctx, tx, kp.target.Table) }); err != nil {
			return err
		}
	}
	if kp.tables.keysSeen {
		return st.Create(ctx, k, kp.tables.seen, func(tx *sql.Tx) error {
			return st.Driver.EnsureSeen(ctx, tx, kp.tables.seen, kp.target.Table, kp.target.Key, keySchema(schema, kp.target.Key))
		})
	}
	return nil
}

// undoPlanDDL drops, before the operation is planned, the tables an
// earlier attempt made for it (planDDL) without committing its plan.
func (kp *keeper) undoPlanDDL(ctx context.Context) error {
	if !kp.e.st.DDLCommits() {
		return nil
	}
	dropped, err := kp.e.st.DropCreated(ctx, kp.id.Key, func(c ledger.CreatedTable) bool { return !c.Planned })
	if len(dropped) > 0 {
		kp.log.Info("dropped the tables an earlier attempt created without storing its plan", "tables", strings.Join(dropped, ", "))
	}
	return err
}

// planCreated marks, inside the plan's transaction tx, the tables planDDL
// created as the plan's.
func (kp *keeper) planCreated(ctx context.Context, tx *sql.Tx) error {
	if !kp.e.st.DDLCommits() {
		return nil
	}
	return kp.e.st.Ledger.PlanCreated(ctx, tx, kp.id.Key)
}

// dropAbandoned drops, once the operation is abandoned, the tables it
// created: all of them in ordinal mode, whose rows the abandon removed;
// by key, where the rows it committed stay, all but the target. Those it
// could not drop (another table's foreign key refers to one, a lock held
// past the busy timeout) stay recorded as the operation's, and the run
// says so with the undo that drops them once what held them is gone.
func (h *holding) dropAbandoned(ctx context.Context) {
	if !h.e.st.DDLCommits() {
		return
	}
	which := func(c ledger.CreatedTable) bool { return h.target.Ordinal() || c.Name != h.target.Table }
	dropped, err := h.e.st.DropCreated(ctx, h.id.Key, which)
	if len(dropped) > 0 {
		h.res.note(h.log, "dropped %s, which the abandoned import had created", strings.Join(dropped, ", "))
	}
	if err == nil {
		return
	}
	var left []string
	if created, lerr := h.e.st.Ledger.Created(ctx, h.e.st.DB, h.id.Key); lerr == nil {
		for _, c := range created {
			if which(c) {
				left = append(left, c.Name)
			}
		}
	}
	tables, them := "the tables", "them"
	if len(left) > 0 {
		tables, them = strings.Join(left, ", "), english.Verb(len(left), "it", "them")
	}
	forget := ""
	if !h.target.Ordinal() {
		forget = "--forget "
	}
	h.res.note(h.log, "could not drop %s, which the abandoned import had created (%v): once nothing holds %s, `idemport undo %s--table %s %s` (with the same --into) drops %s",
		tables, err, them, forget, h.target.Table, h.id.Key.FileID, them)
}

// evolveApart makes, as a DDL step of its own, the changes the target
// needs to take the file's rows (--evolve), before the transaction that
// writes them, and returns them: they are recorded with the attempt
// before the step, and again by that transaction (recordEvolved).
// Several workers or runs may come to make them at once: one at a time
// looks at the table and changes it, under a lock held until it is done
// (a transaction of its own), so that the others find the table changed
// and change nothing, rather than each finding it unchanged and recording
// and reporting the change as its own. Each step is idempotent besides (a
// column added IF NOT EXISTS, a widening to what the column holds
// already).
func (a *applier) evolveApart(ctx context.Context) (*evolution, error) {
	schema := a.plan.Schema.Arrow()
	lock, err := beginTx(ctx, a.e.st.DB)
	if err != nil {
		return nil, err
	}
	// Committed, not rolled back: the lock's key (a row on MariaDB) then
	// stays, and the next that wait for it take it in turn. Rolled back,
	// the key a first locker made goes, and the waiters, all making it
	// again, deadlock.
	defer lock.Commit()
	if err := a.e.st.Driver.LockTable(ctx, lock.Tx, "evolve", a.target.Table); err != nil {
		return nil, err
	}
	table, err := a.e.st.Driver.Describe(ctx, a.e.st.DB, a.target.Table)
	if err != nil {
		return nil, err
	}
	ev, err := evolve(a.req.Mapping.Evolve, a.e.st.Driver.Limits(), a.target, table, schema)
	if err != nil || ev.text == "" {
		return ev, err
	}
	// Recorded first, with this attempt, so that a kill between the DDL
	// and the rows' transaction, whose rerun finds the table changed and
	// changes nothing, leaves the change in the attempt that made it.
	if err := withTx(ctx, a.e.st.DB, func(tx *sql.Tx) error { return a.recordEvolved(ctx, tx, ev) }); err != nil {
		return nil, err
	}
	if err := a.e.st.Hit("after-ddl-record"); err != nil {
		return nil, err
	}
	return ev, a.alter(ctx, ev, schema)
}

// alter makes the changes ev to the target, as DDL steps of their own
// (store.Alter), and checks the table (Ensure) for rows of schema.
func (a *applier) alter(ctx context.Context, ev *evolution, schema *arrow.Schema) error {
	d := a.e.st.Driver
	return a.e.st.Alter(ctx, func(tx *sql.Tx) error {
		for _, f := range ev.add {
			if err := d.AddColumn(ctx, tx, a.target.Table, f); err != nil {
				return err
			}
		}
		for _, w := range ev.widen {
			if err := d.Widen(ctx, tx, a.target.Table, w.column, w.kind); err != nil {
				return err
			}
		}
		return d.Ensure(ctx, tx, a.target, schema)
	})
}

// recordEvolved records, inside tx, the changes evolveApart made.
func (a *applier) recordEvolved(ctx context.Context, tx *sql.Tx, ev *evolution) error {
	if ev == nil || ev.text == "" {
		return nil
	}
	return a.e.st.Ledger.SchemaChanged(ctx, tx, a.attempt.ID, ev.text)
}

// completionDDL makes, before an --atomic import's completing
// transaction, the DDL steps that transaction would make elsewhere: the
// schema changes of --evolve and the deletion mark column of a soft
// snapshot. It returns the changes, which the completing transaction
// records (evolveAtCompletion).
func (a *applier) completionDDL(ctx context.Context) (*evolution, error) {
	if !a.e.st.DDLCommits() || !a.req.Mapping.Atomic {
		return nil, nil
	}
	ev, err := a.evolveApart(ctx)
	if err != nil {
		return nil, err
	}
	if ev == nil || ev.text == "" {
		// A table that fits the file, which the plan did not ensure (an
		// existing table is checked at completion): Ensure gives it the
		// lineage columns the move writes, as alter does a changed one.
		if err := a.e.st.Alter(ctx, func(tx *sql.Tx) error {
			return a.e.st.Driver.Ensure(ctx, tx, a.target, a.plan.Schema.Arrow())
		}); err != nil {
			return nil, err
		}
	}
	if s := a.req.Mapping.Snapshot; s != nil && s.Soft {
		err = a.e.st.Alter(ctx, func(tx *sql.Tx) error { return a.e.st.Driver.EnsureDeleted(ctx, tx, a.target.Table) })
	}
	return ev, err
}

// dropAfterCompletion drops, once the operation completed, its staging
// table and its table of keys seen, which the completing transaction
// drops elsewhere. A kill before leaves them for gc.
func (a *applier) dropAfterCompletion(ctx context.Context) {
	if !a.e.st.DDLCommits() {
		return
	}
	stage, seen := a.req.Mapping.Atomic, a.tables.keysSeen
	_, err := a.e.st.DropCreated(ctx, a.id.Key, func(c ledger.CreatedTable) bool {
		return stage && c.Name == a.tables.stage || seen && c.Name == a.tables.seen
	})
	if err != nil {
		a.log.Warn("could not drop the import's staging tables; gc drops them", "err", err)
	}
}
