package checkpoint

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/migrate"
)

// ErrNotHeld means the caller does not hold the partition's claim: its lease
// expired and another attempt took the partition, or it was never claimed.
var ErrNotHeld = errors.New("partition claim not held")

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common; the same
// type as idemtype.Querier and sink.Querier.
type Querier = idemtype.Querier

// Driver is what the checkpoint store needs of the target database's
// driver: its migrations, and its checkpoint operations on the tables that
// prefix places. Every sink.Driver is one.
type Driver interface {
	idemtype.Migrator
	Checkpoints(prefix string) Ops
}

// Ops are the checkpoint store's database operations, implemented by the
// target database's driver (sink.Driver.Checkpoints) on idemport's tables
// "plans" and "partitions" as its migrations create them. Each runs its
// statements on the Querier or transaction it is given and wraps its
// errors with what it was doing; an Ops is safe for concurrent use.
// Leases are judged by the database's clock, in Unix milliseconds. The
// logic above them (what not held means, who a claim recovered from, the
// counters of a done partition) is the Store's.
type Ops interface {
	// SavePlan inserts op's plan body and its partitions, their superseded
	// rows as EncodeOrdinals writes them.
	SavePlan(ctx context.Context, tx *sql.Tx, op Op, attempt string, body []byte, rows int64, parts []Partition) error
	// Plan returns op's stored plan body, ok false when none is stored.
	Plan(ctx context.Context, q Querier, op Op) (body []byte, ok bool, err error)
	// Partitions returns op's partitions in index order, their state as
	// stored (Counts: the committed effects Inserted, Updated, Unchanged,
	// Stale) and their superseded rows decoded by DecodeOrdinals.
	Partitions(ctx context.Context, q Querier, op Op) ([]Partition, error)
	// ClaimPartition takes the lowest-numbered partition of op that is not
	// done and not held by a live lease, leasing it to attempt for leaseMs
	// from now, and returns it (its plan fields and LeaseAttempt) with the
	// attempt that held it before, "" if none; nil when there is none. It
	// runs in tx, which excludes other claims of the same partition (the
	// database's write lock, or a row lock that other claims skip).
	ClaimPartition(ctx context.Context, tx *sql.Tx, op Op, attempt string, leaseMs int64) (p *Partition, holder string, err error)
	// InTransaction reports whether another session's open transaction
	// holds partition idx of op locked, probing in a transaction of its
	// own on db; always false where the database has no row locks.
	InTransaction(ctx context.Context, db *sql.DB, op Op, idx int) (bool, error)
	// Fence locks partition idx for tx and renews its lease by leaseMs if
	// attempt holds it and it is not done; it returns how many partitions
	// it renewed (1, or 0 when attempt does not hold it).
	Fence(ctx context.Context, tx *sql.Tx, op Op, idx int, attempt string, leaseMs int64) (int64, error)
	// Complete marks partition idx done by attempt with the counters c
	// (Inserted, Updated, Unchanged, Stale, Rejected) if attempt holds it
	// and it is not done, ending its lease; it returns how many partitions
	// it marked.
	Complete(ctx context.Context, tx *sql.Tx, op Op, idx int, attempt string, c idemtype.Rows) (int64, error)
	// DoneBy waits in tx for any transaction holding partition idx of op
	// to end, then returns the attempt that marked it done, "" while not.
	DoneBy(ctx context.Context, tx *sql.Tx, op Op, idx int) (string, error)
	// Rejected sums the rejected rows of op's partitions.
	Rejected(ctx context.Context, q Querier, op Op) (int64, error)
	// Release ends attempt's leases on op's unfinished partitions.
	Release(ctx context.Context, q Querier, op Op, attempt string) error
	// Renew extends attempt's leases on op's unfinished partitions to
	// leaseMs from now and returns how many it renewed.
	Renew(ctx context.Context, q Querier, op Op, attempt string, leaseMs int64) (int64, error)
	// Progress counts op's partitions now; attempt's own leases count as
	// claimable.
	Progress(ctx context.Context, q Querier, op Op, attempt string) (Progress, error)
	// Totals sums the counters of op's done partitions (Read is their
	// rows).
	Totals(ctx context.Context, q Querier, op Op) (idemtype.Rows, error)
	// Holders returns, in order, the attempts holding live leases on op's
	// unfinished partitions.
	Holders(ctx context.Context, q Querier, op Op) ([]string, error)
	// Expire makes attempt's leases on op's unfinished partitions run out
	// now.
	Expire(ctx context.Context, q Querier, op Op, attempt string) error
	// Drop deletes op's plan and partitions, returning how many of each.
	Drop(ctx context.Context, tx *sql.Tx, op Op) (plans, parts int64, err error)
}

// Store reads and writes plans and partition marks. It is safe for
// concurrent use.
type Store struct {
	db     *sql.DB
	d      Driver
	ops    Ops
	prefix string
}

// New returns a Store over db, whose driver is d, with tables named with
// prefix (the driver's sink.Database.Prefix).
func New(db *sql.DB, d Driver, prefix string) *Store {
	return &Store{db: db, d: d, ops: d.Checkpoints(prefix), prefix: prefix}
}

// Migrate creates or upgrades the checkpoint tables.
func (s *Store) Migrate(ctx context.Context) error {
	return migrate.Apply(ctx, s.db, s.d, s.prefix, "checkpoint")
}

// Op names the operation a plan belongs to: target table and file ID.
type Op struct {
	Table  string
	FileID string
}

// Partition is a stored partition: its boundaries, as the plan pass found
// them, and its state.
type Partition struct {
	// The partition as planned; its Superseded rows are not applied.
	idemtype.Partition

	Done         bool
	DoneBy       string
	LeaseAttempt string
	LeaseExpires int64
	Counts       idemtype.Rows // of a done partition: its committed effects
}

// Save stores the plan body (opaque JSON) and its partitions for op.
func (s *Store) Save(ctx context.Context, tx *sql.Tx, op Op, attempt string, body []byte, rows int64, parts []Partition) error {
	return s.ops.SavePlan(ctx, tx, op, attempt, body, rows, parts)
}

// Load returns op's stored plan body and partitions, or a nil body when no
// plan is stored.
func (s *Store) Load(ctx context.Context, q Querier, op Op) ([]byte, []Partition, error) {
	body, ok, err := s.ops.Plan(ctx, q, op)
	if err != nil || !ok {
		return nil, nil, err
	}
	parts, err := s.Partitions(ctx, q, op)
	return body, parts, err
}

// Partitions returns op's partitions in index order.
func (s *Store) Partitions(ctx context.Context, q Querier, op Op) ([]Partition, error) {
	parts, err := s.ops.Partitions(ctx, q, op)
	if err != nil {
		return nil, err
	}
	for i := range parts {
		if p := &parts[i]; p.Done {
			p.Counts.Read, p.Counts.Rejected, p.Counts.Superseded = p.Rows, p.Rejected, int64(len(p.Superseded))
		}
	}
	return parts, nil
}

// Claim is a partition claimed by an attempt.
type Claim struct {
	Partition
	// RecoveredFrom is the attempt whose expired lease on the partition this
	// claim took over, or empty.
	RecoveredFrom string
}

// Claim takes the lowest-numbered partition of op that is not done and not
// held by a live lease (its own in-flight claims included), leasing it to
// attempt for leaseMs. It returns nil when there is none. Run it in its own
// short transaction, which keeps other claims from taking the same
// partition (Ops.ClaimPartition).
func (s *Store) Claim(ctx context.Context, tx *sql.Tx, op Op, attempt string, leaseMs int64) (*Claim, error) {
	p, holder, err := s.ops.ClaimPartition(ctx, tx, op, attempt, leaseMs)
	if err != nil || p == nil {
		return nil, err
	}
	c := &Claim{Partition: *p}
	if holder != "" && holder != attempt {
		c.RecoveredFrom = holder
	}
	return c, nil
}

// InTransaction reports whether another session's open transaction holds
// partition idx of op locked (its holder fenced it and has not committed;
// a holder frozen there cannot be taken over even once its lease expires).
// Where the database has no row locks it is always false: a writer inside
// its transaction holds the whole database's write lock instead.
func (s *Store) InTransaction(ctx context.Context, db *sql.DB, op Op, idx int) (bool, error) {
	return s.ops.InTransaction(ctx, db, op, idx)
}

// Fence locks partition idx for the caller's transaction and renews its
// lease, failing with ErrNotHeld unless attempt holds it and it is not done.
// Call it first in the partition's transaction.
func (s *Store) Fence(ctx context.Context, tx *sql.Tx, op Op, idx int, attempt string, leaseMs int64) error {
	n, err := s.ops.Fence(ctx, tx, op, idx, attempt, leaseMs)
	return held(n, err, idx)
}

// Complete marks partition idx done by attempt with its counters, failing
// with ErrNotHeld unless attempt holds it. Call it in the transaction that
// committed the partition's effects. A done partition's rejected count is
// c.Rejected: its rows not written, the plan's bad rows and those the
// database refused.
func (s *Store) Complete(ctx context.Context, tx *sql.Tx, op Op, idx int, attempt string, c idemtype.Rows) error {
	n, err := s.ops.Complete(ctx, tx, op, idx, attempt, c)
	return held(n, err, idx)
}

// DoneBy returns the attempt that marked partition idx of op done, or ""
// while it is not done. It first waits for any transaction that holds the
// partition (a fenced partition transaction) to end, so that it answers
// for a COMMIT whose reply was lost: by then that transaction has
// committed or rolled back. Call it in its own transaction.
func (s *Store) DoneBy(ctx context.Context, tx *sql.Tx, op Op, idx int) (string, error) {
	by, err := s.ops.DoneBy(ctx, tx, op, idx)
	if err != nil {
		return "", fmt.Errorf("partition %d: %w", idx, err)
	}
	return by, nil
}

// Rejected counts op's bad rows as seen by q: the rows not written by done
// partitions, and the plan's bad rows of the others.
func (s *Store) Rejected(ctx context.Context, q Querier, op Op) (int64, error) {
	return s.ops.Rejected(ctx, q, op)
}

// EncodeOrdinals encodes ascending ordinals, all at least first, as the
// unsigned varints of their differences; nil when there are none. It is
// how a partition's superseded rows are stored.
func EncodeOrdinals(first int64, ords []int64) []byte {
	if len(ords) == 0 {
		return nil
	}
	b := make([]byte, 0, len(ords)*2)
	prev := first
	for _, o := range ords {
		b = binary.AppendUvarint(b, uint64(o-prev))
		prev = o
	}
	return b
}

// DecodeOrdinals reverses EncodeOrdinals.
func DecodeOrdinals(first int64, b []byte) ([]int64, error) {
	var out []int64
	prev := first
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("corrupt superseded rows")
		}
		prev += int64(d)
		out = append(out, prev)
		b = b[n:]
	}
	return out, nil
}

// held says what an operation on partition idx that requires the claim
// and changed n partitions means: ErrNotHeld when it changed none.
func held(n int64, err error, idx int) error {
	if err != nil {
		return fmt.Errorf("partition %d: %w", idx, err)
	}
	if n != 1 {
		return fmt.Errorf("partition %d: %w", idx, ErrNotHeld)
	}
	return nil
}

// Release gives up attempt's claims on op's unfinished partitions.
func (s *Store) Release(ctx context.Context, q Querier, op Op, attempt string) error {
	return s.ops.Release(ctx, q, op, attempt)
}

// Renew extends attempt's leases on op's unfinished partitions by leaseMs
// from now. It returns how many leases it renewed.
func (s *Store) Renew(ctx context.Context, q Querier, op Op, attempt string, leaseMs int64) (int64, error) {
	return s.ops.Renew(ctx, q, op, attempt, leaseMs)
}

// Progress summarises op's partitions at the database's current time.
type Progress struct {
	Total     int64
	Done      int64
	Claimable int64 // not done and not held by a live lease
	Held      int64 // not done and held by a live lease of another attempt than the caller's
}

// Progress counts op's partitions; attempt is the caller, whose own leases
// count as claimable.
func (s *Store) Progress(ctx context.Context, q Querier, op Op, attempt string) (Progress, error) {
	return s.ops.Progress(ctx, q, op, attempt)
}

// Totals sums the counters of op's done partitions.
func (s *Store) Totals(ctx context.Context, q Querier, op Op) (idemtype.Rows, error) {
	return s.ops.Totals(ctx, q, op)
}

// Holders returns the attempts holding live leases on op's unfinished
// partitions.
func (s *Store) Holders(ctx context.Context, q Querier, op Op) ([]string, error) {
	return s.ops.Holders(ctx, q, op)
}

// Expire ends attempt's leases on op's unfinished partitions now, so another
// attempt may take them over. Use it only for an attempt known to be dead.
func (s *Store) Expire(ctx context.Context, q Querier, op Op, attempt string) error {
	return s.ops.Expire(ctx, q, op, attempt)
}

// Drop deletes op's stored plan and partition rows, returning how many of
// each it deleted. Use it only for completed operations.
func (s *Store) Drop(ctx context.Context, tx *sql.Tx, op Op) (plans, parts int64, err error) {
	return s.ops.Drop(ctx, tx, op)
}
