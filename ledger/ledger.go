package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/migrate"
)

// State is the state of an operation.
type State string

// The states of an operation.
const (
	Processing State = "processing" // an attempt is working on it, or died doing so
	Failed     State = "failed"     // the last attempt stopped cleanly with an error
	Completed  State = "completed"  // every partition committed and the outcome is stored
	Refused    State = "refused"    // the plan pass found too many bad rows; nothing was written
	Undone     State = "undone"     // `idemport undo` removed its effects (ordinal mode) or forgot it
	Abandoned  State = "abandoned"  // its source changed under an attempt; rows it committed were removed (ordinal mode)
	// Superseded is the final state of a refused, or failed without
	// effect, operation that a run with another fingerprint replaced. It
	// is only ever found among past operations.
	Superseded State = "superseded"
	// Replaced is the final state of a completed operation whose file ID
	// was imported again with other content and --replace: the new
	// version's operation removed its rows (ordinal mode) or its keys the
	// new version lacks (by key). It is only ever found among past
	// operations, with the content digest of the version that replaced it.
	Replaced State = "replaced"
)

// Errors callers branch on.
var (
	// ErrLeaseLost means another attempt took over the lease this attempt held.
	ErrLeaseLost = errors.New("lease lost to another attempt")
	// ErrFileKeyCollision means two file IDs hash to the same file key.
	ErrFileKeyCollision = errors.New("file key collision")
	// ErrCompleted means the operation is completed: the ledger refuses
	// to move it back (to processing, failed or abandoned) and to record
	// the attempt that completed it as failed. Only Reset (--reapply) and
	// Close to undone move a completed operation on.
	ErrCompleted = errors.New("operation already completed")
)

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common; the same
// type as idemtype.Querier and sink.Querier.
type Querier = idemtype.Querier

// Driver is what the ledger needs of the target database's driver: what
// every store of idemport's state needs, and the operation lock; every
// sink.Driver is one, and the methods mean what sink.Driver says.
type Driver interface {
	idemtype.StateDriver
	// Lock keeps two deciders from deciding for one operation.
	Lock(ctx context.Context, tx *sql.Tx, key string) error
	// Ledger returns the ledger's operations on the tables prefix places.
	Ledger(prefix string) Ops
}

// Ledger reads and writes idemport's operation records. It is safe for
// concurrent use; its methods take the Querier or transaction to run in.
type Ledger struct {
	db     *sql.DB
	d      Driver
	ops    Ops
	prefix string

	// replaceCols says whether the columns of migration replaceMigration
	// (operations.replaces, operations_past.replaced_by) exist: after
	// Migrate they do; a database an earlier version wrote, opened
	// read-only, may lack them, and reads then leave the fields empty.
	mu          sync.Mutex
	replaceCols *bool
	// migrated says Migrate has run: every table of the ledger exists,
	// and reads need not look them up first.
	migrated bool
}

// replaceMigration is the ledger migration that adds the columns of
// replacements (0014_replace).
const replaceMigration = 14

// New returns a Ledger over db, whose driver is d, with tables named with
// prefix (the driver's sink.Database.Prefix).
func New(db *sql.DB, d Driver, prefix string) *Ledger {
	return &Ledger{db: db, d: d, ops: d.Ledger(prefix), prefix: prefix}
}

// Migrate creates or upgrades the ledger's tables.
func (l *Ledger) Migrate(ctx context.Context) error { return l.MigrateWith(ctx) }

// MigrateWith creates or upgrades the ledger's tables and those of the
// other components named (as "checkpoint"), whose migrations the driver
// holds and which share the ledger's versions table: on a driver that
// applies migrations together, what all of them miss goes to the database
// in one transaction. Concurrent callers are safe, as with Migrate.
func (l *Ledger) MigrateWith(ctx context.Context, components ...string) error {
	return l.MigrateSeen(ctx, nil, components...)
}

// MigrateSeen is MigrateWith that tells seen, unless nil, what the first
// look-up of the versions table found, as soon as it has: exists false
// says the state held no tables of idemport's when the migration began
// (a fresh state), so that a caller may start work that needs none of
// them while the migration runs. seen is called at most once, on the
// goroutine that migrates, and not at all when the migration fails before
// that look-up.
func (l *Ledger) MigrateSeen(ctx context.Context, seen func(exists bool), components ...string) error {
	var d migrate.Driver = l.d
	if seen != nil {
		w := &watched{Migrator: l.d, table: l.prefix + "migrations", seen: seen}
		d = w
		if t, ok := l.d.(migrate.Together); ok {
			d = watchedTogether{w, t}
		}
	}
	if err := migrate.ApplyAll(ctx, l.db, d, l.prefix, append([]string{"ledger"}, components...)...); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	yes := true
	l.replaceCols, l.migrated = &yes, true
	return nil
}

// MigratesTogether reports whether the ledger's driver applies the
// migrations a state misses in one message (migrate.Together), so
// that MigrateSeen's caller may leave a fresh state's migrations running.
func (l *Ledger) MigratesTogether() bool {
	_, ok := l.d.(migrate.Together)
	return ok
}

// exists reports whether the ledger's table name (unprefixed) exists:
// after Migrate every one does, without asking; a ledger opened read-only
// asks the database, which an earlier version may have written without it.
func (l *Ledger) exists(ctx context.Context, q Querier, name string) (bool, error) {
	l.mu.Lock()
	migrated := l.migrated
	l.mu.Unlock()
	if migrated {
		return true, nil
	}
	return l.d.TableExists(ctx, q, l.prefix+name)
}

// hasReplaceCols reports whether the ledger's tables have the columns of
// replacements; it asks the database once, unless Migrate told it.
func (l *Ledger) hasReplaceCols(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.replaceCols != nil {
		return *l.replaceCols, nil
	}
	ok, err := migrate.Applied(ctx, l.db, l.d, l.prefix, "ledger", replaceMigration)
	if err != nil {
		return false, err
	}
	l.replaceCols = &ok
	return ok, nil
}

// Key identifies an operation.
type Key struct {
	Table  string
	FileID string
}

func (k Key) String() string { return k.Table + " ← " + k.FileID }

// Identity is what a run knows about the operation it is asked to perform.
type Identity struct {
	Key
	FileKey       int64  // compact hash of FileID, used in target keys and lineage
	ContentDigest string // sha256:…
	MappingDigest string // sha256:… of Mapping
	Mapping       string // canonical JSON of the mapping
	// ReadAs gives, by column name, the type (its canonical name) the file's
	// column is read as whatever the mapping says: for a text file going
	// into an existing table, the table column's; for Parquet and Arrow,
	// the file's own. A mapping's column type ("columns") that names
	// exactly that type changes nothing, so it is no difference (see
	// SameMapping). Nil when unknown: then only equal digests are the same
	// mapping.
	ReadAs map[string]string
	// Equivalent lists other mapping digests that mean the same as
	// MappingDigest for this file (the mapping as an earlier version spelt
	// it): an operation stored with one of them has the same mapping.
	Equivalent []string
	Path       string
	Size       int64
}

// SameMapping reports whether the stored operation op was made with a
// mapping that means the same as id's: the same canonical mapping, or one
// that differs only in column types that name, in either mapping, the
// type id.ReadAs says the column is read as anyway. So a --column that
// restates the existing table's type (or a Parquet column's own) changes
// neither an earlier import's identity, made with or without it, nor a
// later one's. The digests stay those of the mappings as given.
func (id Identity) SameMapping(op *Operation) bool {
	if op.MappingDigest == id.MappingDigest || slices.Contains(id.Equivalent, op.MappingDigest) {
		return true
	}
	if len(id.ReadAs) == 0 {
		return false
	}
	was, now := effective(op.Mapping, id.ReadAs), effective(id.Mapping, id.ReadAs)
	return was != "" && was == now
}

// effective returns the canonical mapping document doc less the column
// types that readAs gives the columns anyway, re-encoded (keys sorted),
// or "" when doc is not a JSON object.
func effective(doc string, readAs map[string]string) string {
	var m map[string]any
	if json.Unmarshal([]byte(doc), &m) != nil || m == nil {
		return ""
	}
	// The mapping version says how inference types columns; where ReadAs
	// is known, the table's (or file's) own types decide them instead.
	delete(m, "mapping_version")
	if cols, ok := m["columns"].(map[string]any); ok {
		for name, t := range cols {
			if s, ok := t.(string); ok && readAs[name] == s {
				delete(cols, name)
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// Operation is the stored record of an operation.
type Operation struct {
	Key
	FileKey       int64
	State         State
	ContentDigest string
	MappingDigest string
	Mapping       string
	Path          string
	Size          int64
	Planned       bool
	LeaseAttempt  string // attempt holding the planning lease, if any
	LeaseExpires  int64
	CreatedAt     int64
	UpdatedAt     int64
	CompletedAt   int64
	CompletedBy   string
	Outcome       string // JSON: the stored outcome or refusal report
	Attempts      int64
	Rows          idemtype.Rows
	// Replaces is, for an operation that replaces the completed earlier
	// version of its file ID (--replace), that version's content digest:
	// every attempt of it removes that version's rows before it completes.
	// Empty otherwise.
	Replaces string
	// ReplacedBy is, for a past operation in state Replaced, the content
	// digest of the version that replaced it.
	ReplacedBy string
}

// Get returns the operation for k, or nil when there is none, and the
// database's current time in Unix milliseconds. A ledger whose tables do
// not exist yet has no operations.
func (l *Ledger) Get(ctx context.Context, q Querier, k Key) (*Operation, int64, error) {
	now, err := l.ops.Clock(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	op, err := l.Find(ctx, q, k)
	if err != nil {
		return nil, 0, err
	}
	return op, now, nil
}

// Clock returns the database's current time in Unix milliseconds, by
// which leases are judged.
func (l *Ledger) Clock(ctx context.Context, q Querier) (int64, error) {
	return l.ops.Clock(ctx, q)
}

// Find is Get without the database's time, one round trip fewer, for
// callers that judge no lease by it.
func (l *Ledger) Find(ctx context.Context, q Querier, k Key) (*Operation, error) {
	replaces, err := l.hasReplaceCols(ctx)
	if err != nil {
		return nil, err
	}
	op, found, err := l.ops.Operation(ctx, q, k, replaces)
	if err != nil {
		if ok, terr := l.d.TableExists(ctx, q, l.prefix+"operations"); terr == nil && !ok {
			return nil, nil // a database idemport has not written to yet
		}
		return nil, err
	}
	if !found {
		return nil, nil
	}
	return &op, nil
}

// Attempt describes an invocation as it starts.
type Attempt struct {
	ID            string
	Trigger       string
	Host          string
	PID           int
	ProcStart     uint64 // identity of the process's start, to tell a reused pid apart
	Path          string
	RecoveredFrom string // the attempt whose lease this one took over, if any
}

// Create records a new operation in state processing, with a holding the
// planning lease for leaseMs, and records a as its first attempt.
func (l *Ledger) Create(ctx context.Context, tx *sql.Tx, id Identity, a Attempt, leaseMs int64) error {
	// Insert-or-keep, then read: two operations of one file (into two
	// tables) may record its key at once.
	other, err := l.ops.RecordFileKey(ctx, tx, id.FileKey, id.FileID)
	if err != nil {
		return err
	}
	if other != id.FileID {
		return fmt.Errorf("%w: file IDs %q and %q share key %d; give one of them another --file-id", ErrFileKeyCollision, other, id.FileID, id.FileKey)
	}
	if err := l.ops.CreateOperation(ctx, tx, id, a.ID, leaseMs); err != nil {
		return err
	}
	return l.insertAttempt(ctx, tx, id.Key, a)
}

func (l *Ledger) insertAttempt(ctx context.Context, tx *sql.Tx, k Key, a Attempt) error {
	return l.ops.RecordAttempt(ctx, tx, k, a)
}

// Start records a as a new attempt on an existing operation and sets the
// operation processing. With plan true, a also takes the planning lease.
// It fails with ErrCompleted, recording nothing, when the operation is
// completed: a run that decided to join it before it completed must decide
// again.
func (l *Ledger) Start(ctx context.Context, tx *sql.Tx, k Key, a Attempt, plan bool, leaseMs int64) error {
	if err := l.insertAttempt(ctx, tx, k, a); err != nil {
		return err
	}
	started, err := l.ops.StartOperation(ctx, tx, k, a.ID, plan, leaseMs)
	if err != nil {
		return err
	}
	if !started {
		return fmt.Errorf("start attempt on %s: %w", k, ErrCompleted)
	}
	return nil
}

// Planned marks the operation's plan as stored and releases the planning
// lease. It fails with ErrLeaseLost when attempt no longer holds that lease.
func (l *Ledger) Planned(ctx context.Context, tx *sql.Tx, k Key, attempt string) error {
	held, err := l.ops.MarkPlanned(ctx, tx, k, attempt)
	return leaseHeld(held, err, "mark planned")
}

// Refuse records that the plan pass refused the file, with report (JSON)
// as the stored outcome. It fails with ErrLeaseLost when attempt no longer
// holds the planning lease.
func (l *Ledger) Refuse(ctx context.Context, tx *sql.Tx, k Key, attempt, report string, rows idemtype.Rows) error {
	held, err := l.ops.RecordRefusal(ctx, tx, k, attempt, report, rows)
	return leaseHeld(held, err, "record refusal")
}

// RefuseLate records that the file of operation k was refused while its
// stored plan was being applied, before any partition of it committed
// (its table no longer fits the plan), with report (JSON) as the stored
// outcome. Call it in a transaction that holds the operation's Lock and
// drops its checkpoints. It fails with ErrCompleted, changing nothing,
// when the operation is completed.
func (l *Ledger) RefuseLate(ctx context.Context, tx *sql.Tx, k Key, report string) error {
	done, err := l.ops.RecordLateRefusal(ctx, tx, k, report)
	if err == nil && !done {
		err = fmt.Errorf("record the refusal of %s: %w", k, ErrCompleted)
	}
	return err
}

// Count adds a committed partition's counters to the attempt and the
// operation. Call it in the partition's transaction.
func (l *Ledger) Count(ctx context.Context, tx *sql.Tx, k Key, attempt string, r idemtype.Rows) error {
	return l.count(ctx, tx, k, attempt, r, 1)
}

// Recount adds r to the counters of attempt and of the operation without
// counting a partition: an --atomic import's completing transaction uses
// it to move the rows its partitions counted as written to the staging
// table into what the move did to the target (r's fields sum to zero).
func (l *Ledger) Recount(ctx context.Context, tx *sql.Tx, k Key, attempt string, r idemtype.Rows) error {
	return l.count(ctx, tx, k, attempt, r, 0)
}

func (l *Ledger) count(ctx context.Context, tx *sql.Tx, k Key, attempt string, r idemtype.Rows, partitions int) error {
	return l.ops.Count(ctx, tx, k, attempt, r, partitions)
}

// Complete marks the operation completed by attempt with outcome (JSON)
// stored for replay. It reports false when another attempt completed it
// first, in which case nothing changes.
func (l *Ledger) Complete(ctx context.Context, tx *sql.Tx, k Key, attempt, outcome string) (bool, error) {
	return l.ops.CompleteOperation(ctx, tx, k, attempt, outcome)
}

// Fail records that attempt stopped with an error: it releases the planning
// lease if attempt holds it and, when othersLive is false, sets a processing
// operation failed so the next run resumes it at once. It fails with
// ErrCompleted, changing nothing, when the operation is completed (by
// attempt or another): whatever stopped attempt, the operation's work is
// done. Call it in a transaction that holds the operation's Lock, so that
// no completing transaction is in flight.
func (l *Ledger) Fail(ctx context.Context, q Querier, k Key, attempt string, othersLive bool) error {
	state, err := l.ops.OperationState(ctx, q, k)
	if err != nil {
		return err
	}
	if state == Completed {
		return fmt.Errorf("record the failure of attempt %s: %w", attempt, ErrCompleted)
	}
	if err := l.ops.ReleaseLease(ctx, q, k, attempt); err != nil {
		return err
	}
	if othersLive {
		return nil
	}
	return l.ops.MarkFailed(ctx, q, k)
}

// End records how attempt ended: its outcome word, its error message (empty
// for none), partitions it found done by others, and leases it recovered.
// An attempt that completed its operation never ends with an error: End
// then fails with ErrCompleted and records nothing.
func (l *Ledger) End(ctx context.Context, q Querier, attempt, outcome, errMsg string, skipped, recovered int64) error {
	ended, err := l.ops.EndAttempt(ctx, q, attempt, outcome, errMsg, skipped, recovered)
	if err != nil || errMsg == "" || ended {
		return err
	}
	known, err := l.ops.AttemptExists(ctx, q, attempt)
	if err != nil {
		return err
	}
	if known {
		return fmt.Errorf("end attempt %s as %s: %w", attempt, outcome, ErrCompleted)
	}
	return nil
}

// Heartbeat renews attempt's planning lease, if it holds it, and records
// that the attempt is alive.
func (l *Ledger) Heartbeat(ctx context.Context, q Querier, k Key, attempt string, leaseMs int64) error {
	return l.ops.Heartbeat(ctx, q, k, attempt, leaseMs)
}

// Retract deletes operation k and its attempts when it has no plan yet and
// attempt holds its planning lease: the run found the command itself wrong
// before anything was planned, so nothing of it should be remembered.
func (l *Ledger) Retract(ctx context.Context, tx *sql.Tx, k Key, attempt string) error {
	held, err := l.ops.Retract(ctx, tx, k, attempt)
	return leaseHeld(held, err, "retract operation")
}

// Process returns where attempt ran: its host, pid and process start
// identity. ok is false when the attempt is unknown.
func (l *Ledger) Process(ctx context.Context, q Querier, attempt string) (host string, pid int, start uint64, ok bool, err error) {
	return l.ops.Process(ctx, q, attempt)
}

// Expire ends the planning lease of attempt on k now, so another attempt
// may take it over. Use it only for an attempt known to be dead.
func (l *Ledger) Expire(ctx context.Context, q Querier, k Key, attempt string) error {
	return l.ops.ExpireLease(ctx, q, k, attempt)
}

// Lock makes the caller's transaction the only one deciding for operation k
// until it ends (the driver's Lock), so two runs cannot both see no
// operation and both create it.
func (l *Ledger) Lock(ctx context.Context, tx *sql.Tx, k Key) error {
	if err := l.d.Lock(ctx, tx, l.prefix+k.Table+"\n"+k.FileID); err != nil {
		return fmt.Errorf("lock operation %s: %w", k, err)
	}
	return nil
}

// Running returns the attempts that have recorded no end, on operations
// still processing, oldest first: the attempts that may hold a lock of the
// database (SQLite's write lock, a PostgreSQL row or table lock) inside an
// open transaction. An attempt whose process died without recording its
// end stays here until another attempt finds it dead; callers that can
// tell (proc.Gone on the attempt's host) leave such attempts out.
func (l *Ledger) Running(ctx context.Context, q Querier) ([]Attempt, error) {
	return l.ops.Running(ctx, q)
}
