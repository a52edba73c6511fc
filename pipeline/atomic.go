package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// ensureStage creates the staging table inside the plan's transaction,
// with the target's constraints where the driver carries them
// (sink.StageConstrainer), so that a row the target refuses is a bad row
// of the staging write, as in a plain import, not a failure of the move.
func (kp *keeper) ensureStage(ctx context.Context, tx *sql.Tx, schema *arrow.Schema) error {
	if !kp.req.Mapping.Atomic {
		return nil
	}
	if err := kp.e.st.Driver.Ensure(ctx, tx, kp.tables.write, schema); err != nil {
		return err
	}
	if c, ok := kp.e.st.Driver.(sink.StageConstrainer); ok {
		return c.ConstrainStage(ctx, tx, kp.target.Table, kp.tables.stage)
	}
	return nil
}

// moveStaged moves the staged rows into the target inside the completing
// transaction, says in a note what the move did to the target, and
// returns how many rows were new to it.
//
// Each partition counted its rows as inserted into the staging table;
// what the reader of the target sees is what the move did: new, changed,
// unchanged or older rows. moveStaged recounts them so, in the ledger, for
// the attempt that committed each partition (and so for the operation),
// and returns the change to the operation's counters (all) and to this
// attempt's (mine), for the caller to add once the transaction commits.
// The classification (Classify, by attempt) is read before the move; when
// the move inserted or updated other rows than it says, another import
// wrote one of the keys in between, and moveStaged fails with
// sink.ErrKeyStoredMeanwhile, for the completing transaction to run again,
// so that no key is counted new by two imports.
func (a *applier) moveStaged(ctx context.Context, tx *sql.Tx) (fresh int64, all, mine idemtype.Rows, err error) {
	if !a.req.Mapping.Atomic {
		return 0, all, mine, nil
	}
	names := make([]string, len(a.plan.Schema))
	for i, c := range a.plan.Schema {
		names[i] = c.Name
	}
	parts, err := a.e.st.CP.Partitions(ctx, tx, a.op)
	if err != nil {
		return 0, all, mine, err
	}
	attempts, group := stageGroups(a.e.st.Driver, parts)
	classes, err := a.e.st.Driver.Classify(ctx, tx, a.target, a.tables.stage, names, group)
	if err != nil {
		// Comparing the staged values as the table's columns hold them
		// (PostgreSQL casts them) meets a value a column cannot hold
		// before the move does: the same refusal.
		return 0, all, mine, a.moveRefused(err)
	}
	if err := a.e.st.Hit("before-move"); err != nil {
		return 0, all, mine, err
	}
	staged, fresh, written, err := a.e.st.Driver.Merge(sink.WithPoints(ctx, a.e.st.Hit), tx, a.target, a.tables.stage, names)
	if err != nil {
		return 0, all, mine, a.moveRefused(err)
	}
	var classified idemtype.Rows
	for g, c := range classes {
		if g < 0 || int(g) >= len(attempts) {
			return 0, all, mine, fmt.Errorf("staged rows of %s outside every partition", a.target.Table)
		}
		classified.Add(c)
	}
	rewritten := false
	if classified.Inserted != fresh || classified.Updated != written-fresh {
		// A table whose triggers change or skip the rows they are given
		// makes the move do other than the classification says by
		// itself: the move is what happened, and its counts (its own,
		// RETURNING) stand, each staged row the move did not write as
		// the classification said taken off its class (reconcile).
		if rw, ok := a.e.st.Driver.(sink.RowRewriter); ok {
			yes, err := rw.RewritesRows(ctx, tx, a.target.Table)
			if err != nil {
				return 0, all, mine, err
			}
			if yes {
				classes, rewritten = reconcile(classes, fresh, written-fresh)
			}
		}
	}
	if !rewritten && (classified.Inserted != fresh || classified.Updated != written-fresh) {
		// Another import stored and committed a key of the staged rows
		// (or changed, or deleted, a stored one) after Classify read
		// them, before the move met them: the move did to it other than
		// the classification says, and the counts must be what it did.
		// The completing transaction runs again (completeOnce), and its
		// classification finds the key as it is now.
		return 0, all, mine, fmt.Errorf("move staged rows into %s: %w: classified %d new and %d changed, the move inserted %d and updated %d",
			a.target.Table, sink.ErrKeyStoredMeanwhile, classified.Inserted, classified.Updated, fresh, written-fresh)
	}
	for g, c := range classes {
		delta := idemtype.Rows{Inserted: c.Inserted - c.Read, Updated: c.Updated, Unchanged: c.Unchanged, Stale: c.Stale}
		if err := a.e.st.Ledger.Recount(ctx, tx, a.id.Key, attempts[g], delta); err != nil {
			return 0, all, mine, err
		}
		all.Add(delta)
		if attempts[g] == a.attempt.ID {
			mine.Add(delta)
		}
	}
	a.res.note(a.log, "moved %d staged rows into %s in one transaction: %d new, %d changed, %d unchanged or older", staged, a.target.Table, fresh, written-fresh, staged-written)
	if rewritten {
		a.res.note(a.log, "the triggers of %s changed or skipped rows as they were moved (the file said %d new and %d changed): the counts are what the move did, a row a trigger skipped or left as stored counted unchanged",
			a.target.Table, classified.Inserted, classified.Updated)
	}
	return fresh, all, mine, nil
}

// reconcile returns classes, the classification of the staged rows by
// group, made to add up to what the move did (inserted new rows, updated
// stored ones) in a table whose triggers change or skip rows: rows
// classified new or changed that the move did not write so are counted
// unchanged, and rows classified unchanged that it updated (a trigger
// that stamps them) changed, group after group in order. It returns false
// when the move cannot be so explained: it inserted more rows than were
// new, which only another import deleting a key meanwhile does.
func reconcile(classes map[int64]idemtype.Rows, inserted, updated int64) (map[int64]idemtype.Rows, bool) {
	var sum idemtype.Rows
	for _, c := range classes {
		sum.Add(c)
	}
	extraIns, extraUpd := sum.Inserted-inserted, sum.Updated-updated
	if extraIns < 0 {
		return classes, false
	}
	groups := slices.Sorted(maps.Keys(classes))
	out := make(map[int64]idemtype.Rows, len(classes))
	for _, g := range groups {
		c := classes[g]
		n := min(extraIns, c.Inserted)
		c.Inserted, c.Unchanged, extraIns = c.Inserted-n, c.Unchanged+n, extraIns-n
		if extraUpd > 0 {
			n = min(extraUpd, c.Updated)
			c.Updated, c.Unchanged, extraUpd = c.Updated-n, c.Unchanged+n, extraUpd-n
		}
		out[g] = c
	}
	for _, g := range groups {
		if extraUpd >= 0 {
			break
		}
		c := out[g]
		n := min(-extraUpd, c.Unchanged)
		c.Updated, c.Unchanged, extraUpd = c.Updated+n, c.Unchanged-n, extraUpd+n
		out[g] = c
	}
	if extraIns != 0 || extraUpd != 0 {
		return classes, false
	}
	return out, true
}

// MoveRefusedError is the move of an --atomic import's staged rows into
// its table refused by the table: a constraint the staging table could
// not carry (sink.StageConstrainer: a foreign key, a trigger, a unique
// index besides the key, a CHECK over a column the file lacks or holds
// in another type), or a value a column cannot hold. The completing transaction
// rolled back, so nothing of the file reached the table, and every rerun
// of the operation would meet the same refusal: the attempt is refused
// (exit 5), not failed, and the way out is to forget the operation
// ('idemport undo --forget', which drops its stage) and import the fixed
// file, or the same file without --atomic, whose writer quarantines the
// rows the table refuses.
type MoveRefusedError struct {
	Table  string
	FileID string
	Reason string // the database's reason
	// KeysOne says the table refused two keys of the file that its key
	// compares as one (sink.ErrKeysOneToTable), which a plain import
	// writes one over the other rather than quarantining.
	KeysOne bool
	Err     error
}

func (e *MoveRefusedError) Error() string {
	return fmt.Sprintf("refused: the file cannot be moved into %s as it is: the table refused its staged rows: %s; nothing of it reached %s, and every rerun of it would be refused the same way",
		e.Table, e.Reason, e.Table)
}

func (e *MoveRefusedError) Unwrap() error { return e.Err }

// moveRefused returns err, the failure of the move of the staged rows, as
// a *MoveRefusedError when the driver says the table refused the rows'
// values (sink.RowErrorer), else err. A key another transaction stored
// during the move (sink.ErrKeyStoredMeanwhile) is not a refusal: the
// completing transaction runs again (completeOnce) and finds it stored.
func (a *applier) moveRefused(err error) error {
	re, ok := a.e.st.Driver.(sink.RowErrorer)
	if !ok || errors.Is(err, sink.ErrKeyStoredMeanwhile) {
		return err
	}
	var row *sink.RowError
	if !errors.As(re.RowError(err), &row) {
		return err
	}
	return &MoveRefusedError{Table: a.target.Table, FileID: a.id.FileID, Reason: row.Reason, KeysOne: errors.Is(err, sink.ErrKeysOneToTable), Err: err}
}

// stageGroups maps the staged rows to the attempts that committed their
// partitions: it returns those attempts and an SQL expression over a
// staged row (alias s) giving the index of its attempt among them, by its
// ordinal. Consecutive partitions of one attempt make one range. With no
// partitions (a file of no rows) nothing is staged, and the expression is
// the constant -1: a CASE needs at least one WHEN.
func stageGroups(d sink.Driver, parts []checkpoint.Partition) (attempts []string, group string) {
	if len(parts) == 0 {
		return nil, "-1"
	}
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b checkpoint.Partition) int { return cmp.Compare(a.First, b.First) })
	index := map[string]int{}
	var b strings.Builder
	b.WriteString("CASE")
	for i, p := range parts {
		if i+1 < len(parts) && parts[i+1].DoneBy == p.DoneBy {
			continue // the range goes on
		}
		g, ok := index[p.DoneBy]
		if !ok {
			g = len(attempts)
			index[p.DoneBy] = g
			attempts = append(attempts, p.DoneBy)
		}
		fmt.Fprintf(&b, " WHEN s.%s < %d THEN %d", d.Quote(sink.RowColumn), p.First+p.Rows, g)
	}
	b.WriteString(" ELSE -1 END")
	return attempts, b.String()
}

// dropStage drops the staging table inside the completing transaction.
func (a *applier) dropStage(ctx context.Context, tx *sql.Tx) error {
	if !a.req.Mapping.Atomic || a.e.st.DDLCommits() { // else dropped after tx (dropAfterCompletion)
		return nil
	}
	if err := a.e.st.Driver.DropTable(ctx, tx, a.tables.stage); err != nil {
		return fmt.Errorf("drop staging table %s: %w", a.tables.stage, err)
	}
	return nil
}
