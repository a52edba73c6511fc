package ledger

import (
	"context"
	"database/sql"

	"github.com/idemport/idemport/idemtype"
)

// NotRejected returns those of ordinals that are not stored rejects of
// operation k: replay applies only rows that were quarantined.
func (l *Ledger) NotRejected(ctx context.Context, q Querier, k Key, ordinals []int64) ([]int64, error) {
	have := map[int64]bool{}
	for start := 0; start < len(ordinals); start += 500 {
		chunk := ordinals[start:min(start+500, len(ordinals))]
		found, err := l.ops.RejectedOrdinals(ctx, q, k, chunk)
		if err != nil {
			return nil, err
		}
		for _, o := range found {
			have[o] = true
		}
	}
	var missing []int64
	for _, o := range ordinals {
		if !have[o] {
			missing = append(missing, o)
		}
	}
	return missing, nil
}

// StartReplay records a as an attempt on the completed operation k that
// applies corrected rejects; the operation's state and outcome stay.
func (l *Ledger) StartReplay(ctx context.Context, tx *sql.Tx, k Key, a Attempt) error {
	return l.insertAttempt(ctx, tx, k, a)
}

// Replayed marks the rejects at ordinals of k as applied by attempt and
// adds the replay's counters to the attempt (not to the operation, whose
// counters describe the import of the file).
func (l *Ledger) Replayed(ctx context.Context, tx *sql.Tx, k Key, attempt string, ordinals []int64, r idemtype.Rows) error {
	if err := l.ops.MarkReplayed(ctx, tx, k, attempt, ordinals); err != nil {
		return err
	}
	return l.ops.CountReplay(ctx, tx, attempt, r)
}

// DropRejectPayloads clears the raw values and rows of k's rejects, keeping
// their ordinals, codes and reasons. It returns how many it cleared.
func (l *Ledger) DropRejectPayloads(ctx context.Context, tx *sql.Tx, k Key) (int64, error) {
	return l.ops.DropRejectPayloads(ctx, tx, k)
}
