package pipeline

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// What no plan can check (a unique constraint on other columns, a CHECK
// constraint, a foreign key, a trigger) fails a write at apply time. Each
// batch is written under a savepoint; when the database refuses it for the
// values of some of its rows (a sink.RowError), the batch is rolled back to
// the savepoint and written again in halves, each under its own savepoint,
// down to the single rows it refuses. Those rows are quarantined as rejects
// in the partition's transaction, within the same --max-rejects as the
// plan's bad rows, so a partition rolled back contributes none of them.

// savepoint names the savepoint a batch is written under.
const savepoint = "idemport_batch"

// refusedRow is a row the database refused at apply time.
type refusedRow struct {
	ordinal int64
	column  string
	value   string
	code    string
	reason  string
}

// errTooManyRefused stops isolating a partition whose refused rows alone are
// more than --max-rejects allows.
var errTooManyRefused = errors.New("too many rows refused")

// writeBatch writes rec, whose rows have these ordinals, inside tx, and
// returns the rows the database refused instead of failing on them. room
// is how many more refused rows the partition may have before the file is
// over its limit whatever the other partitions hold; past it, writeBatch
// stops with errTooManyRefused.
func (a *applier) writeBatch(ctx context.Context, tx *sql.Tx, w sink.Writer, rec arrow.RecordBatch, ordinals []int64, room int64) (idemtype.Rows, []refusedRow, error) {
	c, err := a.writeUnder(ctx, tx, w, rec, ordinals)
	var re *sink.RowError
	if err == nil || !errors.As(err, &re) {
		return c, nil, err
	}
	if err := a.e.st.Driver.RollbackToSavepoint(ctx, tx, savepoint); err != nil {
		return idemtype.Rows{}, nil, err
	}
	if err := a.e.st.Driver.ReleaseSavepoint(ctx, tx, savepoint); err != nil {
		return idemtype.Rows{}, nil, err
	}
	if err := a.e.st.Hit("inside-isolation"); err != nil {
		return idemtype.Rows{}, nil, err
	}
	n := rec.NumRows()
	if n == 1 {
		bad := []refusedRow{{ordinal: ordinals[0], column: re.Column, code: re.Code, reason: re.Reason}}
		if idx := rec.Schema().FieldIndices(re.Column); re.Column != "" && len(idx) > 0 && rec.Column(idx[0]).IsValid(0) {
			bad[0].value = rec.Column(idx[0]).ValueStr(0)
		}
		if room < 1 {
			return idemtype.Rows{}, bad, errTooManyRefused
		}
		return idemtype.Rows{Read: 1, Rejected: 1}, bad, nil
	}
	var total idemtype.Rows
	var bad []refusedRow
	for _, half := range [][2]int64{{0, n / 2}, {n / 2, n}} {
		sub := rec.NewSlice(half[0], half[1])
		c, b, err := a.writeBatch(ctx, tx, w, sub, ordinals[half[0]:half[1]], room-int64(len(bad)))
		sub.Release()
		bad = append(bad, b...)
		if err != nil {
			return total, bad, err
		}
		total.Add(c)
	}
	return total, bad, nil
}

// writeUnder writes rec under savepoint and releases it when the write
// succeeds; a *sink.RowError leaves it taken, to roll back to. A
// sink.SavepointWriter takes and releases it itself, in fewer round trips,
// and may leave it taken after a write that succeeded (to be released by
// its next batch's first message, or ended by the transaction's end):
// only a *sink.RowError is rolled back to savepoint.
func (a *applier) writeUnder(ctx context.Context, tx *sql.Tx, w sink.Writer, rec arrow.RecordBatch, ordinals []int64) (idemtype.Rows, error) {
	if sw, ok := w.(sink.SavepointWriter); ok {
		return sw.WriteUnder(ctx, tx, savepoint, a.id.FileKey, rec, ordinals)
	}
	if err := a.e.st.Driver.Savepoint(ctx, tx, savepoint); err != nil {
		return idemtype.Rows{}, err
	}
	c, err := w.Write(ctx, tx, a.id.FileKey, rec, ordinals)
	if err == nil {
		err = a.e.st.Driver.ReleaseSavepoint(ctx, tx, savepoint)
	}
	return c, err
}

// room is how many rows the database may refuse in one partition before
// the file is over --max-rejects, counting only the plan's bad rows
// besides: the exact count, with the other partitions' refused rows, is
// checked when the partition commits.
func (a *applier) room() int64 {
	l := a.req.MaxRejects
	allowed := l.Count
	if l.Percent > 0 {
		allowed = int64(l.Percent / 100 * float64(a.plan.Rows))
	}
	return allowed - a.plan.Rejected
}

// quarantine stores the rows of partition c the database refused as
// rejects inside tx, and fails when the file's bad rows, with them, are
// more than --max-rejects allows. Call it after the partition's counts are
// added to the operation, whose row the update locks: concurrent
// partitions then check the limit one after another.
func (a *applier) quarantine(ctx context.Context, tx *sql.Tx, c *checkpoint.Claim, refused []refusedRow) error {
	if len(refused) == 0 {
		return nil
	}
	ordinals := make([]int64, len(refused))
	for i, b := range refused {
		ordinals[i] = b.ordinal
	}
	raw, err := a.file.RawRows(a.plan, c.Partition.Partition, ordinals)
	if err != nil {
		return fmt.Errorf("partition %d: re-read refused rows: %w", c.Index, err)
	}
	rejects := make([]ledger.Reject, len(refused))
	for i, b := range refused {
		rj := ledger.Reject{Reject: idemtype.Reject{Ordinal: b.ordinal, Offset: -1, Column: b.column, Value: shown(b.value), Code: b.code, Message: b.reason}}
		if x, ok := raw[b.ordinal]; ok {
			rj.Offset, rj.Row, rj.Fields = x.Offset, storable(x.Text), x.Fields
		}
		rejects[i] = rj
	}
	if err := a.e.st.Ledger.AddRejects(ctx, tx, a.id.Key, a.attempt.ID, rejects); err != nil {
		return err
	}
	total, err := a.e.st.CP.Rejected(ctx, tx, a.op)
	if err != nil {
		return err
	}
	if !a.req.MaxRejects.Allows(total, a.plan.Rows) {
		return a.overLimit(c, refused, total)
	}
	return nil
}

// RowsRefusedError is a partition whose rows the table refused (a
// sink.RowError: a constraint, a trigger, a value its column's type
// refuses, such as a PostgreSQL enum's or domain's) put the file over
// --max-rejects. No plan can know them; the partition's transaction rolled
// back, its rows and rejects together, so none of its rows reached the
// table, and a rerun meets the same refusal until the rows, the table or
// --max-rejects change. The attempt is refused (exit 5), as an --atomic
// import's MoveRefusedError is, not failed (exit 1, "a rerun resumes");
// the operation stays resumable, and the partitions committed before stay.
type RowsRefusedError struct {
	File      string
	Table     string
	Partition int
	msg       string
}

func (e *RowsRefusedError) Error() string { return e.msg }

// overLimit is the refusal of a partition whose refused rows put the file
// over --max-rejects (total bad rows in all, or -1 when not counted): it
// names the file, and of each row its ordinal, column, value and the
// database's reason, and the partition stays uncommitted.
func (a *applier) overLimit(c *checkpoint.Claim, refused []refusedRow, total int64) error {
	var rows []string
	for i, b := range refused {
		if i == 5 {
			rows = append(rows, fmt.Sprintf("… %d more", len(refused)-5))
			break
		}
		where := fmt.Sprintf("row %d", b.ordinal)
		if b.column != "" {
			where += fmt.Sprintf(" column %q", b.column)
			if b.value != "" {
				where += fmt.Sprintf(" value %q", b.value)
			}
		}
		rows = append(rows, where+": "+b.reason)
	}
	count := english.Plural(total, "bad row") + ", more"
	if total < 0 {
		count = "more bad rows"
	}
	return &RowsRefusedError{File: a.req.Path, Table: a.target.Table, Partition: c.Index,
		msg: fmt.Sprintf("refused: the table %s refused rows of %s: %s; with them the file has %s than --max-rejects %s allows, so partition %d is not committed",
			a.target.Table, a.req.Path, strings.Join(rows, "; "), count, a.req.MaxRejects, c.Index)}
}
