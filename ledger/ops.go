package ledger

import (
	"context"
	"database/sql"

	"github.com/idemport/idemport/idemtype"
)

// Ops are the ledger's database operations, implemented by the target
// database's driver (sink.Driver.Ledger) on idemport's tables as its
// migrations create them. Each runs its statements on the Querier it is
// given and wraps its errors with what it was doing; what a result means
// (a file unknown, an object without validators) is decided here, in
// Ledger. An Ops is safe for concurrent use.
type Ops interface {
	// Clock returns the database's current time in Unix milliseconds.
	Clock(ctx context.Context, q Querier) (int64, error)
	// Operation returns the record of operation k, found false when there
	// is none; its Replaces is read only with replaces (the ledger has the
	// column).
	Operation(ctx context.Context, q Querier, k Key, replaces bool) (op Operation, found bool, err error)
	// RecordFileKey records fileID as the file ID of fileKey unless one
	// is recorded, and returns the one recorded.
	RecordFileKey(ctx context.Context, tx *sql.Tx, fileKey int64, fileID string) (string, error)
	// CreateOperation inserts operation id, processing, created now, one
	// attempt, attempt holding its planning lease for leaseMs.
	CreateOperation(ctx context.Context, tx *sql.Tx, id Identity, attempt string, leaseMs int64) error
	// RecordAttempt inserts attempt a on operation k, started now, its
	// first heartbeat its start (the clock read once).
	RecordAttempt(ctx context.Context, tx *sql.Tx, k Key, a Attempt) error
	// StartOperation sets operation k processing with an attempt more,
	// unless it is completed; with plan, attempt takes its planning
	// lease for leaseMs and its outcome and counters are cleared. It
	// reports whether it set the operation.
	StartOperation(ctx context.Context, tx *sql.Tx, k Key, attempt string, plan bool, leaseMs int64) (bool, error)
	// MarkPlanned sets operation k planned, its planning lease ended, if
	// attempt holds that lease; held reports whether it did.
	MarkPlanned(ctx context.Context, tx *sql.Tx, k Key, attempt string) (held bool, err error)
	// RecordRefusal sets operation k refused with report as its outcome,
	// rows' read and rejected as its counters, its planning lease ended,
	// if attempt holds that lease; held reports whether it did.
	RecordRefusal(ctx context.Context, tx *sql.Tx, k Key, attempt, report string, rows idemtype.Rows) (held bool, err error)
	// RecordLateRefusal sets operation k refused with report as its
	// outcome, its planning lease ended, unless it is completed; it
	// reports whether it did. Its counters and planned mark stay.
	RecordLateRefusal(ctx context.Context, tx *sql.Tx, k Key, report string) (bool, error)
	// Count adds r, and partitions committed, to the counters of attempt
	// (renewing its heartbeat), and r to those of operation k.
	Count(ctx context.Context, tx *sql.Tx, k Key, attempt string, r idemtype.Rows, partitions int) error
	// CompleteOperation sets operation k completed by attempt with
	// outcome, its planning lease ended, unless it is completed; it
	// reports whether it did.
	CompleteOperation(ctx context.Context, tx *sql.Tx, k Key, attempt, outcome string) (bool, error)
	// OperationState returns the state of operation k, "" when there is
	// none.
	OperationState(ctx context.Context, q Querier, k Key) (State, error)
	// ReleaseLease ends the planning lease of operation k if attempt
	// holds it.
	ReleaseLease(ctx context.Context, q Querier, k Key, attempt string) error
	// MarkFailed sets operation k failed if it is processing and no live
	// planning lease holds it.
	MarkFailed(ctx context.Context, q Querier, k Key) error
	// EndAttempt records attempt's end now, with outcome, errMsg (none
	// when empty), skipped partitions and recovered leases; with an
	// errMsg, not when attempt completed its operation. It reports
	// whether it recorded the end.
	EndAttempt(ctx context.Context, q Querier, attempt, outcome, errMsg string, skipped, recovered int64) (bool, error)
	// AttemptExists reports whether attempt is recorded.
	AttemptExists(ctx context.Context, q Querier, attempt string) (bool, error)
	// Heartbeat renews the planning lease of operation k for leaseMs if
	// attempt holds it, and sets attempt's heartbeat now.
	Heartbeat(ctx context.Context, q Querier, k Key, attempt string, leaseMs int64) error
	// Retract deletes operation k, and then all its attempts, if it has
	// no plan and attempt holds its planning lease; held reports whether
	// it did.
	Retract(ctx context.Context, tx *sql.Tx, k Key, attempt string) (held bool, err error)
	// Process returns the host, pid and process start of attempt, found
	// false when it is not recorded.
	Process(ctx context.Context, q Querier, attempt string) (host string, pid int, start uint64, found bool, err error)
	// ExpireLease ends now the planning lease of operation k if attempt
	// holds it.
	ExpireLease(ctx context.Context, q Querier, k Key, attempt string) error
	// Running returns the attempts with no recorded end on processing
	// operations, oldest first.
	Running(ctx context.Context, q Querier) ([]Attempt, error)
	// List returns the operations matching f, newest first; Replaces is
	// read only with replaces.
	List(ctx context.Context, q Querier, f Filter, replaces bool) ([]Operation, error)
	// Attempts returns the attempts on operation k, oldest first.
	Attempts(ctx context.Context, q Querier, k Key) ([]AttemptRecord, error)
	// StoreRejects inserts rs, rejects of operation k found by attempt,
	// in one statement (so len(rs) is bounded by the caller), keeping a
	// reject already stored at the same ordinal.
	StoreRejects(ctx context.Context, tx *sql.Tx, k Key, attempt string, rs []Reject) error
	// Rejects returns the rejects of operation k in ordinal order.
	Rejects(ctx context.Context, q Querier, k Key) ([]Reject, error)

	// QuickCheck returns the digests recorded for st, found false when
	// no row matches every field of st.
	QuickCheck(ctx context.Context, q Querier, st FileStat) (stored, content string, found bool, err error)
	// RememberQuickCheck records st with its digests, replacing the row
	// of st's host and path.
	RememberQuickCheck(ctx context.Context, q Querier, st FileStat, stored, content string) error
	// QuickCheckContent returns a content digest recorded with stored
	// (any host, any path), found false when none is.
	QuickCheckContent(ctx context.Context, q Querier, stored string) (content string, found bool, err error)
	// QuickCheckStored returns at most 16 distinct stored digests
	// recorded with content, other than content itself.
	QuickCheckStored(ctx context.Context, q Querier, content string) ([]string, error)
	// Remote returns the digests recorded for st's URL with st's ETag and
	// size, and st's version id unless st has none; found false when no
	// row matches.
	Remote(ctx context.Context, q Querier, st RemoteStat) (stored, content string, found bool, err error)
	// RememberRemote records st with its digests, replacing the row of
	// st's URL.
	RememberRemote(ctx context.Context, q Querier, st RemoteStat, stored, content string) error

	// RejectedOrdinals returns those of ordinals (at most 500) that are
	// stored rejects of operation k, in no particular order.
	RejectedOrdinals(ctx context.Context, q Querier, k Key, ordinals []int64) ([]int64, error)
	// MarkReplayed marks the rejects of k at ordinals as applied by
	// attempt, now.
	MarkReplayed(ctx context.Context, tx *sql.Tx, k Key, attempt string, ordinals []int64) error
	// CountReplay adds r to the counters of attempt and renews its
	// heartbeat.
	CountReplay(ctx context.Context, tx *sql.Tx, attempt string, r idemtype.Rows) error
	// DropRejectPayloads clears the raw value, row and fields of k's
	// rejects that hold any, and returns how many it cleared.
	DropRejectPayloads(ctx context.Context, tx *sql.Tx, k Key) (int64, error)

	// LastSnapshot returns, of the snapshots of table recorded under any
	// of scopes, the one with the latest as-of time, the last applied
	// among equals; found false when there is none.
	LastSnapshot(ctx context.Context, q Querier, table string, scopes []string) (s Snapshot, found bool, err error)
	// SnapshotOf returns the snapshot the operation of fileID applied to
	// table, found false when none is recorded.
	SnapshotOf(ctx context.Context, q Querier, table, fileID string) (s Snapshot, found bool, err error)
	// RecordSnapshot records that the snapshot of fileID as of asOf was
	// applied to scope of table, now, with the mark markedAt (0: none),
	// replacing the record of the same table, scope and file ID.
	RecordSnapshot(ctx context.Context, tx *sql.Tx, table, scope string, asOf int64, fileID string, markedAt int64) error
	// ForgetSnapshot deletes the records of the snapshots of fileID on
	// table, under any scope.
	ForgetSnapshot(ctx context.Context, tx *sql.Tx, table, fileID string) error
	// ScopeRows returns the rows in scope stored with operation k; found
	// false when none is stored (or k is unknown).
	ScopeRows(ctx context.Context, q Querier, k Key) (n int64, found bool, err error)
	// RecordScopeRows stores n as the rows in scope of operation k unless
	// a number is stored already.
	RecordScopeRows(ctx context.Context, tx *sql.Tx, k Key, n int64) error
	// AddSwept adds n to the rows attempt's sweep deleted.
	AddSwept(ctx context.Context, tx *sql.Tx, attempt string, n int64) error
	// RecordSchemaChanges sets the schema changes attempt made, in words.
	RecordSchemaChanges(ctx context.Context, tx *sql.Tx, attempt, changes string) error
	// Created returns the tables operation k is recorded to have created
	// (RecordCreated), sorted by name.
	Created(ctx context.Context, q Querier, k Key) ([]CreatedTable, error)
	// CreatedByOthers returns how many operations other than k are
	// recorded to have created table.
	CreatedByOthers(ctx context.Context, q Querier, k Key, table string) (int64, error)
	// RecordCreated records that operation k creates table; a table
	// recorded already for k fails on the primary key.
	RecordCreated(ctx context.Context, tx *sql.Tx, k Key, table string) error
	// PlanCreated marks every table operation k is recorded to have
	// created as planned.
	PlanCreated(ctx context.Context, tx *sql.Tx, k Key) error
	// ForgetCreated deletes the record that operation k created table.
	ForgetCreated(ctx context.Context, tx *sql.Tx, k Key, table string) error

	// MoveToPast copies operation k, if there is one, to the past
	// operations, replaced now, and deletes it and its rejects. The past
	// record keeps the state undone or abandoned; a completed one, with
	// by not empty, becomes replaced (by by); any other superseded.
	MoveToPast(ctx context.Context, tx *sql.Tx, k Key, by string) error
	// MarkReplaces sets digest as what operation k replaces.
	MarkReplaces(ctx context.Context, tx *sql.Tx, k Key, digest string) error
	// CloseOperation sets operation k to state, ending any planning
	// lease; unless evenCompleted, not when it is completed. It reports
	// whether it set an operation.
	CloseOperation(ctx context.Context, tx *sql.Tx, k Key, state State, evenCompleted bool) (bool, error)
	// DropRejects deletes the rejects of operation k.
	DropRejects(ctx context.Context, tx *sql.Tx, k Key) error
	// ResetOperation sets operation k processing, with no outcome,
	// completion, rows in scope, replacement or counters.
	ResetOperation(ctx context.Context, tx *sql.Tx, k Key) error
	// RestoreCompleted sets operation k completed, ending any planning
	// lease, when it is processing or failed and records its completion;
	// it reports whether it did.
	RestoreCompleted(ctx context.Context, tx *sql.Tx, k Key) (bool, error)
	// RecordDied ends attempt now with the outcome died, unless it ended.
	RecordDied(ctx context.Context, q Querier, attempt string) error
	// Past returns the past operations matching f, newest first, their
	// UpdatedAt when they were replaced; ReplacedBy is read only with
	// replacedBy (the ledger has the column).
	Past(ctx context.Context, q Querier, f Filter, replacedBy bool) ([]Operation, error)
	// RecordPath sets path as the path of operation k.
	RecordPath(ctx context.Context, q Querier, k Key, path string) error

	// RecordEvent inserts ev into the outbox, unless its ID is there, and
	// a pending delivery of it to each of sinks, unless there is one.
	RecordEvent(ctx context.Context, tx *sql.Tx, ev Event, sinks []SinkRef) error
	// ClaimDelivery leases to by, for leaseMs from now, the oldest
	// pending delivery owed to one of sinks (at least one) whose next
	// try is due and whose lease, if any, has ended, locking its row
	// where the database has row locks; found false when there is none.
	// The delivery's State is left empty.
	ClaimDelivery(ctx context.Context, tx *sql.Tx, sinks []string, by Lessee, leaseMs int64) (d Delivery, found bool, err error)
	// LeaseHolders returns the distinct lessees other than owner, with
	// their pid and process start, of live leases on pending deliveries
	// taken on host. Their Host is left empty.
	LeaseHolders(ctx context.Context, q Querier, host, owner string) ([]Lessee, error)
	// ReleaseLeases ends the leases owner holds on pending deliveries and
	// returns how many.
	ReleaseLeases(ctx context.Context, tx *sql.Tx, owner string) (int64, error)
	// MarkDelivered sets the pending delivery of event to sink delivered
	// now, a try more, its lease and last error cleared, if owner holds
	// its lease; held reports whether it did.
	MarkDelivered(ctx context.Context, q Querier, event, sink, owner string) (held bool, err error)
	// RecordTry sets the pending delivery of event to sink to state, a
	// try more, with errMsg, next tried afterMs from now, its lease
	// cleared, if owner holds its lease; held reports whether it did.
	RecordTry(ctx context.Context, q Querier, event, sink, owner, state, errMsg string, afterMs int64) (held bool, err error)
	// Deliveries returns every event with each of its deliveries (an
	// event owed to none once, with an empty SinkID), oldest event
	// first, only those whose delivery state is state unless state is
	// empty.
	Deliveries(ctx context.Context, q Querier, state string) ([]Delivery, error)
	// DeliveryStates counts the deliveries of event id by state.
	DeliveryStates(ctx context.Context, q Querier, id string) (map[string]int64, error)
	// PendingDeliveries counts the pending deliveries.
	PendingDeliveries(ctx context.Context, q Querier) (int64, error)
	// NextDelivery returns, of the pending deliveries owed to one of sinks
	// (at least one), the earliest time one may be tried (its next try,
	// or the end of a later live lease), less now, in milliseconds;
	// found false when none is pending.
	NextDelivery(ctx context.Context, q Querier, sinks []string) (ms int64, found bool, err error)
	// PruneEvents deletes the events created before cutoff whose every
	// delivery was delivered before cutoff, then the deliveries of events
	// no longer there, and returns how many events it deleted.
	PruneEvents(ctx context.Context, tx *sql.Tx, cutoff int64) (int64, error)
	// AttemptIDs returns the IDs of the attempts on operation k, oldest
	// first.
	AttemptIDs(ctx context.Context, q Querier, k Key) ([]string, error)
}
