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
// driver: what every store of idemport's state needs; every sink.Driver is
// one.
type Driver = idemtype.StateDriver

// Store reads and writes plans and partition marks. It is safe for
// concurrent use.
type Store struct {
	db     *sql.DB
	d      Driver
	prefix string
}

// New returns a Store over db, whose driver is d, with tables named with
// prefix (the driver's sink.Database.Prefix).
func New(db *sql.DB, d Driver, prefix string) *Store {
	return &Store{db: db, d: d, prefix: prefix}
}

// Migrate creates or upgrades the checkpoint tables.
func (s *Store) Migrate(ctx context.Context) error {
	return migrate.Apply(ctx, s.db, s.d, s.prefix, "checkpoint")
}

func (s *Store) q(x string) string { return s.d.Rebind(x) }

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
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO `+s.prefix+`plans (table_name, file_id, body, row_count, partitions, attempt_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, `+s.d.Now()+`)`), op.Table, op.FileID, string(body), rows, len(parts), attempt); err != nil {
		return fmt.Errorf("store plan: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO `+s.prefix+`partitions
		(table_name, file_id, idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded, superseded_rows)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return fmt.Errorf("store partitions: %w", err)
	}
	defer stmt.Close()
	for _, p := range parts {
		if _, err := stmt.ExecContext(ctx, op.Table, op.FileID, p.Index, p.First, p.Rows, p.Rejected, p.Offset, p.Length, int64(p.CRC),
			len(p.Superseded), encodeOrdinals(p.First, p.Superseded)); err != nil {
			return fmt.Errorf("store partition %d: %w", p.Index, err)
		}
	}
	return nil
}

// Load returns op's stored plan body and partitions, or a nil body when no
// plan is stored.
func (s *Store) Load(ctx context.Context, q Querier, op Op) ([]byte, []Partition, error) {
	var body string
	err := q.QueryRowContext(ctx, s.q(`SELECT body FROM `+s.prefix+`plans WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("load plan: %w", err)
	}
	parts, err := s.Partitions(ctx, q, op)
	return []byte(body), parts, err
}

// Partitions returns op's partitions in index order.
func (s *Store) Partitions(ctx context.Context, q Querier, op Op) ([]Partition, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded_rows, done,
		coalesce(done_by, ''), coalesce(lease_attempt, ''), coalesce(lease_expires, 0),
		rows_inserted, rows_updated, rows_unchanged, rows_stale
		FROM `+s.prefix+`partitions WHERE table_name = ? AND file_id = ? ORDER BY idx`), op.Table, op.FileID)
	if err != nil {
		return nil, fmt.Errorf("load partitions: %w", err)
	}
	defer rows.Close()
	var out []Partition
	for rows.Next() {
		var p Partition
		var crc, done int64
		var sup []byte
		if err := rows.Scan(&p.Index, &p.First, &p.Rows, &p.Rejected, &p.Offset, &p.Length, &crc, &sup, &done,
			&p.DoneBy, &p.LeaseAttempt, &p.LeaseExpires,
			&p.Counts.Inserted, &p.Counts.Updated, &p.Counts.Unchanged, &p.Counts.Stale); err != nil {
			return nil, fmt.Errorf("load partitions: %w", err)
		}
		p.CRC = uint32(crc)
		p.Done = done != 0
		if p.Superseded, err = decodeOrdinals(p.First, sup); err != nil {
			return nil, fmt.Errorf("load partition %d: %w", p.Index, err)
		}
		if p.Done {
			p.Counts.Read, p.Counts.Rejected, p.Counts.Superseded = p.Rows, p.Rejected, int64(len(p.Superseded))
		}
		out = append(out, p)
	}
	return out, rows.Err()
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
// attempt for leaseMs. It returns nil when there is none. Run it in its own short
// transaction: the SELECT and UPDATE are one step because the transaction
// holds the database's write lock, or a row lock that other claims skip
// (the driver's SkipLocked).
func (s *Store) Claim(ctx context.Context, tx *sql.Tx, op Op, attempt string, leaseMs int64) (*Claim, error) {
	lock, _ := s.d.SkipLocked("")
	row := tx.QueryRowContext(ctx, s.q(`SELECT idx, coalesce(lease_attempt, '') FROM `+s.prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND done = 0
		AND (lease_attempt IS NULL OR lease_expires <= `+s.d.Now()+`)
		ORDER BY idx LIMIT 1`+lock), op.Table, op.FileID)
	var idx int
	var holder string
	if err := row.Scan(&idx, &holder); errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("claim partition: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET lease_attempt = ?, lease_expires = `+s.d.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND idx = ?`), attempt, leaseMs, op.Table, op.FileID, idx); err != nil {
		return nil, fmt.Errorf("claim partition %d: %w", idx, err)
	}
	var p Partition
	var crc int64
	var sup []byte
	if err := tx.QueryRowContext(ctx, s.q(`SELECT idx, first_row, row_count, rejected, byte_offset, byte_length, crc, superseded_rows
		FROM `+s.prefix+`partitions WHERE table_name = ? AND file_id = ? AND idx = ?`), op.Table, op.FileID, idx).
		Scan(&p.Index, &p.First, &p.Rows, &p.Rejected, &p.Offset, &p.Length, &crc, &sup); err != nil {
		return nil, fmt.Errorf("read partition %d: %w", idx, err)
	}
	p.CRC = uint32(crc)
	sups, err := decodeOrdinals(p.First, sup)
	if err != nil {
		return nil, fmt.Errorf("read partition %d: %w", idx, err)
	}
	p.Superseded = sups
	p.LeaseAttempt = attempt
	c := &Claim{Partition: p}
	if holder != "" && holder != attempt {
		c.RecoveredFrom = holder
	}
	return c, nil
}

// InTransaction reports whether another session's open transaction holds
// partition idx of op locked (its holder fenced it and has not committed;
// a holder frozen there cannot be taken over even once its lease expires).
// Where the database has no row locks (the driver's SkipLocked is not ok)
// it is always false: a writer inside its transaction holds the whole
// database's write lock instead.
func (s *Store) InTransaction(ctx context.Context, db *sql.DB, op Op, idx int) (bool, error) {
	lock, ok := s.d.SkipLocked("")
	if !ok {
		return false, nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("probe partition %d: %w", idx, err)
	}
	defer tx.Rollback()
	var got int
	err = tx.QueryRowContext(ctx, s.q(`SELECT idx FROM `+s.prefix+`partitions WHERE table_name = ? AND file_id = ? AND idx = ?`+lock), op.Table, op.FileID, idx).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("probe partition %d: %w", idx, err)
	}
	return false, nil
}

// Fence locks partition idx for the caller's transaction and renews its
// lease, failing with ErrNotHeld unless attempt holds it and it is not done.
// Call it first in the partition's transaction.
func (s *Store) Fence(ctx context.Context, tx *sql.Tx, op Op, idx int, attempt string, leaseMs int64) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET lease_expires = `+s.d.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND idx = ? AND lease_attempt = ? AND done = 0`), leaseMs, op.Table, op.FileID, idx, attempt)
	return held(res, err, idx)
}

// Complete marks partition idx done by attempt with its counters, failing
// with ErrNotHeld unless attempt holds it. Call it in the transaction that
// committed the partition's effects. A done partition's rejected count is
// c.Rejected: its rows not written, the plan's bad rows and those the
// database refused.
func (s *Store) Complete(ctx context.Context, tx *sql.Tx, op Op, idx int, attempt string, c idemtype.Rows) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET done = 1, done_by = ?, done_at = `+s.d.Now()+`,
		lease_attempt = NULL, lease_expires = NULL,
		rows_inserted = ?, rows_updated = ?, rows_unchanged = ?, rows_stale = ?, rejected = ?
		WHERE table_name = ? AND file_id = ? AND idx = ? AND lease_attempt = ? AND done = 0`),
		attempt, c.Inserted, c.Updated, c.Unchanged, c.Stale, c.Rejected, op.Table, op.FileID, idx, attempt)
	return held(res, err, idx)
}

// DoneBy returns the attempt that marked partition idx of op done, or ""
// while it is not done. It first waits for any transaction that holds the
// partition (a fenced partition transaction) to end, so that it answers
// for a COMMIT whose reply was lost: by then that transaction has
// committed or rolled back. Call it in its own transaction.
func (s *Store) DoneBy(ctx context.Context, tx *sql.Tx, op Op, idx int) (string, error) {
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET done = done
		WHERE table_name = ? AND file_id = ? AND idx = ?`), op.Table, op.FileID, idx); err != nil {
		return "", fmt.Errorf("partition %d: %w", idx, err)
	}
	var by string
	err := tx.QueryRowContext(ctx, s.q(`SELECT coalesce(done_by, '') FROM `+s.prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND idx = ? AND done = 1`), op.Table, op.FileID, idx).Scan(&by)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("partition %d: %w", idx, err)
	}
	return by, nil
}

// Rejected counts op's bad rows as seen by q: the rows not written by done
// partitions, and the plan's bad rows of the others.
func (s *Store) Rejected(ctx context.Context, q Querier, op Op) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, s.q(`SELECT coalesce(sum(rejected), 0) FROM `+s.prefix+`partitions
		WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count rejected rows: %w", err)
	}
	return n, nil
}

// encodeOrdinals encodes ascending ordinals, all at least first, as the
// unsigned varints of their differences; nil when there are none.
func encodeOrdinals(first int64, ords []int64) []byte {
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

// decodeOrdinals reverses encodeOrdinals.
func decodeOrdinals(first int64, b []byte) ([]int64, error) {
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

func held(res sql.Result, err error, idx int) error {
	if err != nil {
		return fmt.Errorf("partition %d: %w", idx, err)
	}
	n, err := res.RowsAffected()
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
	if _, err := q.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET lease_attempt = NULL, lease_expires = NULL
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`), op.Table, op.FileID, attempt); err != nil {
		return fmt.Errorf("release partitions: %w", err)
	}
	return nil
}

// Renew extends attempt's leases on op's unfinished partitions by leaseMs
// from now. It returns how many leases it renewed.
func (s *Store) Renew(ctx context.Context, q Querier, op Op, attempt string, leaseMs int64) (int64, error) {
	res, err := q.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET lease_expires = `+s.d.Now()+` + ?
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`), leaseMs, op.Table, op.FileID, attempt)
	if err != nil {
		return 0, fmt.Errorf("renew partition leases: %w", err)
	}
	return res.RowsAffected()
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
	var p Progress
	err := q.QueryRowContext(ctx, s.q(`SELECT count(*),
		coalesce(sum(done), 0),
		coalesce(sum(CASE WHEN done = 0 AND (lease_attempt IS NULL OR lease_attempt = ? OR lease_expires <= `+s.d.Now()+`) THEN 1 ELSE 0 END), 0),
		coalesce(sum(CASE WHEN done = 0 AND lease_attempt IS NOT NULL AND lease_attempt <> ? AND lease_expires > `+s.d.Now()+` THEN 1 ELSE 0 END), 0)
		FROM `+s.prefix+`partitions WHERE table_name = ? AND file_id = ?`), attempt, attempt, op.Table, op.FileID).
		Scan(&p.Total, &p.Done, &p.Claimable, &p.Held)
	if err != nil {
		return p, fmt.Errorf("read progress: %w", err)
	}
	return p, nil
}

// Totals sums the counters of op's done partitions.
func (s *Store) Totals(ctx context.Context, q Querier, op Op) (idemtype.Rows, error) {
	var c idemtype.Rows
	err := q.QueryRowContext(ctx, s.q(`SELECT coalesce(sum(row_count), 0), coalesce(sum(rows_inserted), 0), coalesce(sum(rows_updated), 0),
		coalesce(sum(rows_unchanged), 0), coalesce(sum(rows_stale), 0), coalesce(sum(superseded), 0), coalesce(sum(rejected), 0)
		FROM `+s.prefix+`partitions WHERE table_name = ? AND file_id = ? AND done = 1`), op.Table, op.FileID).
		Scan(&c.Read, &c.Inserted, &c.Updated, &c.Unchanged, &c.Stale, &c.Superseded, &c.Rejected)
	if err != nil {
		return c, fmt.Errorf("sum partitions: %w", err)
	}
	return c, nil
}

// Holders returns the attempts holding live leases on op's unfinished
// partitions.
func (s *Store) Holders(ctx context.Context, q Querier, op Op) ([]string, error) {
	rows, err := q.QueryContext(ctx, s.q(`SELECT DISTINCT lease_attempt FROM `+s.prefix+`partitions
		WHERE table_name = ? AND file_id = ? AND done = 0 AND lease_attempt IS NOT NULL AND lease_expires > `+s.d.Now()+`
		ORDER BY lease_attempt`), op.Table, op.FileID)
	if err != nil {
		return nil, fmt.Errorf("read lease holders: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Expire ends attempt's leases on op's unfinished partitions now, so another
// attempt may take them over. Use it only for an attempt known to be dead.
func (s *Store) Expire(ctx context.Context, q Querier, op Op, attempt string) error {
	if _, err := q.ExecContext(ctx, s.q(`UPDATE `+s.prefix+`partitions SET lease_expires = 0
		WHERE table_name = ? AND file_id = ? AND lease_attempt = ? AND done = 0`), op.Table, op.FileID, attempt); err != nil {
		return fmt.Errorf("expire leases: %w", err)
	}
	return nil
}

// Drop deletes op's stored plan and partition rows, returning how many of
// each it deleted. Use it only for completed operations.
func (s *Store) Drop(ctx context.Context, tx *sql.Tx, op Op) (plans, parts int64, err error) {
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+s.prefix+`partitions WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID)
	if err != nil {
		return 0, 0, fmt.Errorf("drop partitions: %w", err)
	}
	parts, _ = res.RowsAffected()
	res, err = tx.ExecContext(ctx, s.q(`DELETE FROM `+s.prefix+`plans WHERE table_name = ? AND file_id = ?`), op.Table, op.FileID)
	if err != nil {
		return 0, 0, fmt.Errorf("drop plan: %w", err)
	}
	plans, _ = res.RowsAffected()
	return plans, parts, nil
}
