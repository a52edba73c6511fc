package ops

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/sink"
)

// UndoRequest asks for an import to be retracted.
type UndoRequest struct {
	// FileOrID is a path (matched by content digest) or a file ID.
	FileOrID string
	// Table narrows the operation when the file went to several tables.
	Table string
	// Forget keeps the rows and only forgets the operation, so the file can
	// be imported again. It is required in natural-key mode, where rows may
	// since have been written by other files and cannot be told apart.
	Forget bool
}

// UndoResult reports what an undo did.
type UndoResult struct {
	Table     string       `json:"table"`
	FileID    string       `json:"file_id"`
	AttemptID string       `json:"attempt_id"`
	Previous  ledger.State `json:"previous_state"` // the operation's state before the undo
	Deleted   int64        `json:"deleted"`        // target rows removed
	Forgot    bool         `json:"forgot"`         // rows were kept (--forget)
	// Already is true when the operation was undone before: nothing changed.
	Already bool `json:"already_undone"`
	// EventID is the import.undone event recorded in the outbox.
	EventID string `json:"event_id,omitempty"`
	// Snapshot says, for the undo of a --snapshot import, which snapshot
	// of its table and scope is current now.
	Snapshot *UndoSnapshot `json:"snapshot,omitempty"`
	// Dropped are the tables the undo dropped: the staging table of an
	// --atomic import and the table of keys a --snapshot import recorded,
	// which its completion would have dropped; and where DDL commits
	// apart from rows (MariaDB, MySQL), every table the undone import
	// created, its target too unless --forget kept its rows or another
	// import holds rows there.
	Dropped []string `json:"dropped_tables,omitempty"`
}

// UndoSnapshot is what undoing a snapshot import left current. An undone
// snapshot no longer counts as applied: the one applied before it (if it
// was the latest) is current again, for staleness and for --reapply.
type UndoSnapshot struct {
	Scope string `json:"scope"` // the scope's canonical text; "" for the whole table
	// WasCurrent is true when the undone snapshot was the one current for
	// its scope.
	WasCurrent bool `json:"was_current"`
	// Current is the snapshot current now, nil when none is.
	Current *SnapshotRef `json:"current,omitempty"`
	// Unmarked counts the rows whose deletion mark the undone snapshot's
	// soft sweep set, cleared by the undo (ordinal mode, when it was
	// current): they are live again.
	Unmarked int64 `json:"unmarked"`
	// Restore is true when the table may hold less, or other values, than
	// Current's extract (rows its sweep deleted are gone; by key, the
	// undone file's values are kept): importing Current's file again with
	// --reapply restores it.
	Restore bool `json:"restore"`
}

// SnapshotRef names an applied snapshot.
type SnapshotRef struct {
	FileID string    `json:"file_id"`
	Path   string    `json:"path"` // the file it was last imported from
	AsOf   time.Time `json:"as_of"`
}

// Undo retracts the operation of req.FileOrID. In ordinal mode it deletes
// the rows the file wrote and its quarantined rows, releases any claims on
// its partitions and marks it undone, all in one transaction, so the next
// import of the file starts over. In natural-key mode it refuses (a usage
// error) unless req.Forget. The undo is recorded as an attempt with trigger
// "undo". Undoing an undone operation changes nothing. The undo of a
// --snapshot import withdraws its snapshot in the same transaction
// (undoSnapshot), and the result says which snapshot is current now.
// A lock an import holds inside its transaction (SQLite's write lock, a
// PostgreSQL row or table lock) is waited for as long as the database
// allows (pipeline.Options.BusyTimeout); past that Undo changes nothing
// and returns a *BusyError naming the import.
func (o *Operator) Undo(ctx context.Context, req UndoRequest) (*UndoResult, error) {
	res, err := o.undo(ctx, req)
	if err != nil && ctx.Err() == nil && o.st.Driver.Locked(err) {
		return nil, &BusyError{BusyError: pipeline.LockedBy(ctx, o.st, o.st.Log, "this command", "")}
	}
	return res, err
}

// BusyError says which import holds a lock an operator's command waited
// for as long as the database allows: its pipeline.BusyError, with the
// advice an operator's command takes.
type BusyError struct {
	*pipeline.BusyError
}

func (e *BusyError) Error() string {
	return e.Holding() + "; rerun later, or with a longer --busy-timeout"
}

func (e *BusyError) Unwrap() error { return e.BusyError }

// undo is Undo, but for what it makes of a lock held past the busy timeout.
func (o *Operator) undo(ctx context.Context, req UndoRequest) (*UndoResult, error) {
	if err := o.st.Present(); err != nil {
		return nil, err
	}
	k, m, err := o.undoTarget(ctx, req)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	a := ledger.Attempt{ID: uuid.Must(uuid.NewV7()).String(), Trigger: "undo", Host: host, PID: os.Getpid(),
		ProcStart: proc.Start(os.Getpid()), Path: req.FileOrID}
	res := &UndoResult{Table: k.Table, FileID: k.FileID, AttemptID: a.ID, Forgot: req.Forget}
	tx, err := o.st.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin undo: %w", err)
	}
	defer tx.Rollback()
	op, err := o.lockUndone(ctx, tx, k, req.FileOrID)
	if err != nil {
		return nil, err
	}
	res.Previous = op.State
	if op.State == ledger.Undone {
		return o.undoAgain(ctx, tx, k, m, req.Forget, res)
	}
	if err := o.undoInTx(ctx, tx, k, m, op, a, req.Forget, res); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit undo: %w", err)
	}
	if err := o.afterUndo(ctx, k, req.Forget, res); err != nil {
		return nil, err
	}
	o.st.Log.Info("undone", "operation", k.String(), "attempt_id", a.ID, "deleted", res.Deleted, "forgot", req.Forget)
	return res, nil
}

// lockUndone locks operation k, named by fileOrID, inside tx and returns
// it; that there is none is an error.
func (o *Operator) lockUndone(ctx context.Context, tx *sql.Tx, k ledger.Key, fileOrID string) (*ledger.Operation, error) {
	if err := o.st.Ledger.Lock(ctx, tx, k); err != nil {
		return nil, err
	}
	op, _, err := o.st.Ledger.Get(ctx, tx, k)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, fmt.Errorf("no operation for %s", fileOrID)
	}
	return op, nil
}

// undoAgain is an undo of operation k, already undone: it reports what the
// first undo did and drops the tables that one was killed before dropping.
func (o *Operator) undoAgain(ctx context.Context, tx *sql.Tx, k ledger.Key, m store.Mapping, forget bool, res *UndoResult) (*UndoResult, error) {
	res, err := o.alreadyUndone(ctx, tx, k, m, res)
	if err == nil && !forget && o.st.DDLCommits() {
		tx.Rollback() // what an undo killed before dropping them left
		res.Dropped, err = o.st.DropCreated(ctx, k, nil)
	}
	return res, err
}

// undoInTx undoes operation op (k, mapped as m) inside tx as attempt a:
// its partitions, its rows unless forget, its snapshot's deletions, its
// state and the import.undone event, filling in res.
func (o *Operator) undoInTx(ctx context.Context, tx *sql.Tx, k ledger.Key, m store.Mapping, op *ledger.Operation, a ledger.Attempt,
	forget bool, res *UndoResult) error {
	var err error
	// Partitions first: on PostgreSQL this waits for a holder inside its
	// partition transaction, whose rows the delete below then sees; and a
	// holder that had not begun it can no longer commit (fencing).
	if _, _, err := o.st.CP.Drop(ctx, tx, checkpoint.Op{Table: k.Table, FileID: k.FileID}); err != nil {
		return err
	}
	if !forget {
		if res.Deleted, err = o.st.Driver.DeleteFile(ctx, tx, k.Table, op.FileKey); err != nil {
			return err
		}
	}
	if m.Snapshot != nil {
		if res.Snapshot, err = o.undoSnapshot(ctx, tx, k, m.Snapshot, forget); err != nil {
			return err
		}
	}
	if !o.st.DDLCommits() {
		if res.Dropped, err = o.dropWorkTables(ctx, tx, op); err != nil {
			return err
		}
	}
	if err := o.st.Ledger.Close(ctx, tx, k, ledger.Undone); err != nil {
		return err
	}
	if err := o.st.Ledger.Record(ctx, tx, k, a, string(ledger.Undone)); err != nil {
		return err
	}
	outcome := "undone"
	if forget {
		outcome = "forgotten"
	}
	if res.EventID, err = o.st.RecordEvent(ctx, tx, pipeline.EventUndone, k, a, outcome, idemtype.Rows{}, &res.Deleted); err != nil {
		return err
	}
	return o.st.Hit("inside-undo")
}

// afterUndo runs after the undo committed: the tables the import created
// go with its rows when their DDL committed apart from them.
func (o *Operator) afterUndo(ctx context.Context, k ledger.Key, forget bool, res *UndoResult) error {
	if err := o.st.Hit("after-undo"); err != nil {
		return err
	}
	if !o.st.DDLCommits() {
		return nil
	}
	// The DDL of the import committed apart from its rows: the tables it
	// created go with them (with --forget, which keeps the rows, all but
	// the target), unless another operation holds rows there
	// (store.Store.DropCreated). A kill before leaves them recorded, and
	// an undo of the undone operation drops them.
	var which func(ledger.CreatedTable) bool
	if forget {
		which = func(c ledger.CreatedTable) bool { return c.Name != k.Table }
	}
	var err error
	res.Dropped, err = o.st.DropCreated(ctx, k, which)
	return err
}

// dropWorkTables drops inside tx, where DDL does not commit, the staging
// table (--atomic) and the table of keys seen (--snapshot) of op, which
// its completing transaction would have dropped, and returns those it
// dropped. Left, they would hold the undone import's rows for the next
// import of the same table and file ID, whose completion would find them.
func (o *Operator) dropWorkTables(ctx context.Context, tx *sql.Tx, op *ledger.Operation) ([]string, error) {
	current, err := o.st.Driver.CurrentSchema(ctx, tx)
	if err != nil {
		return nil, err
	}
	listed, err := o.workTablesListed(ctx, tx)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, w := range o.workTables(current, *op) {
		i := slices.IndexFunc(listed, func(l listedTable) bool { return l.tableName == w })
		if i < 0 {
			continue
		}
		name := listed[i].name
		if err := o.st.Driver.DropTable(ctx, tx, name); err != nil {
			return nil, fmt.Errorf("drop %s: %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}

// undoTarget returns the one operation req names and its stored mapping:
// a usage error when req names several (each shown with the command that
// undoes it alone), or one imported by key without req.Forget.
func (o *Operator) undoTarget(ctx context.Context, req UndoRequest) (ledger.Key, store.Mapping, error) {
	var m store.Mapping
	found, err := o.st.Operations(ctx, req.FileOrID, req.Table)
	if err != nil {
		return ledger.Key{}, m, err
	}
	if len(found) != 1 {
		var cands []string
		for _, op := range found {
			cands = append(cands, fmt.Sprintf("%s ← %s (idemport undo --table %s %s)", op.Table, op.FileID, op.Table, op.FileID))
		}
		return ledger.Key{}, m, store.Usagef("%s matches %d imports; undo one of them by its table and file ID: %s", req.FileOrID, len(found), strings.Join(cands, "; "))
	}
	k := found[0].Key
	if err := json.Unmarshal([]byte(found[0].Mapping), &m); err != nil {
		return ledger.Key{}, m, fmt.Errorf("read stored mapping: %w", err)
	}
	if natural := len(m.Key) > 0; natural && !req.Forget {
		return ledger.Key{}, m, store.Usagef("%s was imported into %s by key (%s): its rows may since have been written by other files, so undo cannot remove them; give --forget to keep the rows and forget the import",
			req.FileOrID, k.Table, strings.Join(m.Key, ", "))
	}
	return k, m, nil
}

// alreadyUndone completes res for operation k, found undone in tx: nothing
// changes. For a snapshot import (mapping m) it says again which snapshot
// is current, for a rerun after an undo whose report was lost, and that
// --reapply of it restores the table to its extract.
func (o *Operator) alreadyUndone(ctx context.Context, tx *sql.Tx, k ledger.Key, m store.Mapping, res *UndoResult) (*UndoResult, error) {
	res.Already = true
	if m.Snapshot == nil {
		return res, nil
	}
	cur, err := o.st.Ledger.LastSnapshot(ctx, tx, k.Table, m.Snapshot.Scope)
	if err != nil {
		return nil, err
	}
	if res.Snapshot, err = o.undoneSnapshot(ctx, tx, k.Table, m.Snapshot.Scope, cur); err != nil {
		return nil, err
	}
	res.Snapshot.Restore = cur != nil
	return res, nil
}

// undoSnapshot withdraws, inside tx, the snapshot that operation k (whose
// stored mapping has snapshot s) applied: its record goes, so the
// snapshot applied before it is current again for its table and scope.
// When it was the current one and its rows are removed (not kept: ordinal
// mode without --forget), the marks its soft sweep set are cleared too:
// the rows it marked deleted are live again, as they were before it. Rows
// its hard sweep deleted, and by key the values it wrote, cannot be
// brought back: the result says so (Restore), and --reapply of the
// snapshot now current restores them.
func (o *Operator) undoSnapshot(ctx context.Context, tx *sql.Tx, k ledger.Key, s *store.MappingSnapshot, keep bool) (*UndoSnapshot, error) {
	rec, err := o.st.Ledger.SnapshotOf(ctx, tx, k.Table, k.FileID)
	if err != nil {
		return nil, err
	}
	// The stored mapping spells the scope as the version that made the
	// operation did; its record, as the version that swept did.
	scopes := []string{s.Scope}
	if rec != nil && rec.Scope != s.Scope {
		scopes = append(scopes, rec.Scope)
	}
	was, err := o.st.Ledger.LastSnapshot(ctx, tx, k.Table, scopes...)
	if err != nil {
		return nil, err
	}
	if err := o.st.Ledger.ForgetSnapshot(ctx, tx, k.Table, k.FileID); err != nil {
		return nil, err
	}
	cur, err := o.st.Ledger.LastSnapshot(ctx, tx, k.Table, scopes...)
	if err != nil {
		return nil, err
	}
	res, err := o.undoneSnapshot(ctx, tx, k.Table, s.Scope, cur)
	if err != nil {
		return nil, err
	}
	res.WasCurrent = rec != nil && was != nil && was.FileID == k.FileID
	if !res.WasCurrent {
		return res, nil
	}
	if s.Delete == "soft" && !keep && rec.MarkedAt != 0 {
		terms, err := store.ParseScope(rec.Scope)
		if err != nil {
			return nil, err
		}
		sw := sink.Sweep{Driver: o.st.Driver, Table: k.Table, Scope: terms, Soft: true}
		if res.Unmarked, err = sw.Unmark(ctx, tx, o.st.Driver.TimeValue(time.UnixMicro(rec.MarkedAt))); err != nil {
			return nil, err
		}
		return res, nil
	}
	res.Restore = cur != nil
	return res, nil
}

// undoneSnapshot describes cur, the snapshot current for scope of table
// after an undo (nil when none is), with the path its file was last
// imported from.
func (o *Operator) undoneSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, cur *ledger.Snapshot) (*UndoSnapshot, error) {
	res := &UndoSnapshot{Scope: scope}
	if cur == nil {
		return res, nil
	}
	res.Current = &SnapshotRef{FileID: cur.FileID, Path: cur.FileID, AsOf: time.UnixMilli(cur.AsOf).UTC()}
	op, _, err := o.st.Ledger.Get(ctx, tx, ledger.Key{Table: table, FileID: cur.FileID})
	if err != nil {
		return nil, err
	}
	if op != nil && op.Path != "" {
		res.Current.Path = op.Path
	}
	return res, nil
}
