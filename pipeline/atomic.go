package pipeline

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/sink"
)

// stageTable names the staging table of an --atomic operation: the
// target's columns and key, beside it. Partitions are written into it with
// their checkpoints; the completing transaction moves its rows into the
// target and drops it.
func (r *run) stageTable() string { return r.beside(sink.StagePrefix) }

// writeTarget is where partitions write: the target, or with --atomic its
// staging table.
func (r *run) writeTarget() sink.Target {
	if !r.req.Mapping.Atomic {
		return r.target
	}
	t := r.target
	t.Table = r.stageTable()
	return t
}

// ensureStage creates the staging table inside the plan's transaction.
func (r *run) ensureStage(ctx context.Context, tx *sql.Tx, schema *arrow.Schema) error {
	if !r.req.Mapping.Atomic {
		return nil
	}
	return r.e.sink.Ensure(ctx, tx, r.writeTarget(), schema)
}

// moveStaged moves the staged rows into the target inside the completing
// transaction, says in a note what the move did to the target, and
// returns how many rows were new to it.
func (r *run) moveStaged(ctx context.Context, tx *sql.Tx) (int64, error) {
	if !r.req.Mapping.Atomic {
		return 0, nil
	}
	names := make([]string, len(r.plan.Schema))
	for i, c := range r.plan.Schema {
		names[i] = c.Name
	}
	staged, fresh, written, err := sink.Merge(ctx, tx, r.e.d, r.target, r.stageTable(), names)
	if err != nil {
		return 0, err
	}
	r.note("moved %d staged rows into %s in one transaction: %d new, %d changed, %d unchanged or older", staged, r.target.Table, fresh, written-fresh, staged-written)
	return fresh, nil
}

// dropStage drops the staging table inside the completing transaction.
func (r *run) dropStage(ctx context.Context, tx *sql.Tx) error {
	if !r.req.Mapping.Atomic {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+(sink.Sweep{Dialect: r.e.d}).Quoted(r.stageTable())); err != nil {
		return fmt.Errorf("drop staging table %s: %w", r.stageTable(), err)
	}
	return nil
}
