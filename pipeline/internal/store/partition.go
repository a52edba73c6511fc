package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
)

// partitionCompleter is a driver that marks a partition done and counts
// it in one statement: what checkpoint.Ops.Complete and then
// ledger.Ops.Count (of one partition) do, on the tables prefix places,
// the counts added only when the mark was made. It returns how many
// partitions it marked.
type partitionCompleter interface {
	CompletePartition(ctx context.Context, tx *sql.Tx, prefix string, op checkpoint.Op, idx int, attempt string, c idemtype.Rows) (int64, error)
}

// CompletePartition marks partition idx of operation k done by attempt
// with its counts c, and adds c, and one partition committed, to the
// counters of attempt and of k, in tx, the transaction of the partition's
// effects. Unless attempt still holds the partition's lease (and it is not
// done) it fails with checkpoint.ErrNotHeld and counts nothing. A driver
// that does it in one statement (partitionCompleter) saves the round trips
// of the others, which every partition pays.
func (s *Store) CompletePartition(ctx context.Context, tx *sql.Tx, k ledger.Key, idx int, attempt string, c idemtype.Rows) error {
	op := checkpoint.Op{Table: k.Table, FileID: k.FileID}
	d, ok := s.Driver.(partitionCompleter)
	if !ok {
		if err := s.CP.Complete(ctx, tx, op, idx, attempt, c); err != nil {
			return err
		}
		return s.Ledger.Count(ctx, tx, k, attempt, c)
	}
	n, err := d.CompletePartition(ctx, tx, s.Prefix, op, idx, attempt, c)
	if err != nil {
		return fmt.Errorf("partition %d: %w", idx, err)
	}
	if n != 1 {
		return fmt.Errorf("partition %d: %w", idx, checkpoint.ErrNotHeld)
	}
	return nil
}
