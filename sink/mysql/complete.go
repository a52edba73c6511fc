package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// CompletePartition marks partition idx of op done by attempt with the
// counters r, as checkpoint.Ops.Complete does, and then adds r, and one
// partition committed, to the counters of attempt and of operation op, as
// ledger.Ops.Count does, on the tables prefix places (the ledger's and the
// checkpoints' share it): one message of their three statements (stdsql's
// CompleteStatement, CountAttemptStatement and CountOperationStatement), one
// round trip where there were three, paid by every partition transaction.
// It returns how many partitions it marked: the mark is made only if
// attempt holds the partition's lease and it is not done (the fence
// checked once more before the commit), and nothing is counted unless it
// was (the mark's count, kept in a session variable, is a condition of the
// counts' statements). The server runs them in order, so the rows are
// locked in the order the three statements locked them: the partition,
// the attempt, the operation (two transactions that lock them in other
// orders could deadlock).
func (Driver) CompletePartition(ctx context.Context, tx *sql.Tx, prefix string, op checkpoint.Op, idx int, attempt string, r idemtype.Rows) (int64, error) {
	mark, args := stdsql.CompleteStatement(Driver{}, prefix, op, idx, attempt, r)
	countAttempt, attemptArgs := stdsql.CountAttemptStatement(Driver{}, prefix, attempt, r, 1)
	countOperation, operationArgs := stdsql.CountOperationStatement(Driver{}, prefix, ledger.Key{Table: op.Table, FileID: op.FileID}, r)
	rows, err := tx.QueryContext(ctx, mark+`;
		SET @idemport_marked = ROW_COUNT();
		`+countAttempt+` AND @idemport_marked > 0;
		`+countOperation+` AND @idemport_marked > 0;
		SELECT @idemport_marked`, append(append(args, attemptArgs...), operationArgs...)...)
	if err != nil {
		return 0, fmt.Errorf("mark partition done and count it: %w", err)
	}
	defer rows.Close()
	// The statements before the SELECT return no rows.
	for cols, err := rows.Columns(); len(cols) == 0; cols, err = rows.Columns() {
		if err == nil && !rows.NextResultSet() {
			err = rows.Err()
			if err == nil {
				err = errors.New("no result of its count")
			}
		}
		if err != nil {
			return 0, fmt.Errorf("mark partition done and count it: %w", err)
		}
	}
	var marked int64
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("mark partition done and count it: %w", err)
		}
		return 0, errors.New("mark partition done and count it: no count")
	}
	if err := rows.Scan(&marked); err != nil {
		return 0, fmt.Errorf("mark partition done and count it: %w", err)
	}
	return marked, rows.Close()
}
