package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// A replacement (--replace, ledger.Replace) is one operation: the claim
// that decides it moves the earlier version's operation to the past as
// replaced and records, with the new operation, the content it replaces
// (ledger.Operation.Replaces). From then on every attempt of the new
// operation, whatever flags it is run with, removes the earlier version's
// rows before the operation completes:
//
//   - ordinal mode: every row of the file ID (the earlier version's target
//     keys are the new one's: both are derived from the file ID and the
//     row's ordinal), in the transaction that stores the plan, so that a
//     refused file removes nothing and no partition of the new version is
//     written before; with --atomic, in the completing transaction, before
//     the staged rows move in;
//   - by key: the rows the file ID last wrote (their lineage) whose keys
//     the new version lacks, in the completing transaction, after its
//     rows are written, as a snapshot's sweep (the new version's keys are
//     recorded as a snapshot's are). Before any row of it is written (in
//     the plan's transaction; with --atomic in the completing one) the
//     ordinals of the earlier version's rows are forgotten: a row of the
//     same file with a higher ordinal would otherwise win over the new
//     version's (within one file the last occurrence of a key wins).
//
// Each removal commits with the step it belongs to, so a run killed at any
// point leaves either the step undone (and a rerun does it) or done (and a
// rerun goes on from there).

// replacing reports whether the run's operation replaces an earlier version.
func (c claimed) replacing() bool { return c.replaces != "" }

// replacedWhat says, for the claim's note, what happens to the earlier
// version's rows.
func (cl *claimer) replacedWhat() string {
	switch {
	case cl.target.Ordinal() && cl.req.Mapping.Atomic:
		return "rows are removed in the transaction that moves this version's in"
	case cl.target.Ordinal():
		return "rows are removed when this version's plan is stored, before its rows are written"
	case cl.req.Mapping.Atomic:
		return "keys this version lacks are deleted in the transaction that moves this version's rows in"
	}
	return "keys this version lacks are deleted when this version completes"
}

// prepareReplaced readies, inside tx, the table for the new version when
// the run's operation replaces an earlier one: in ordinal mode it removes
// the rows of the file ID (the earlier version's); by key it forgets their
// ordinals (sink.Driver.ForgetOrdinals), so that the new version's rows write
// over them as over rows of another file. atCompletion says which
// transaction calls it: the plan's (false), or the completing one (true),
// before the staged rows move in; it acts in the plan's, or with --atomic
// in the completing one.
func (h *holding) prepareReplaced(ctx context.Context, tx *sql.Tx, atCompletion bool) error {
	if !h.replacing() || h.req.Mapping.Atomic != atCompletion {
		return nil
	}
	if h.target.Ordinal() {
		n, err := h.e.st.Driver.DeleteFile(ctx, tx, h.target.Table, h.id.FileKey)
		if err != nil {
			return fmt.Errorf("remove the replaced version's rows: %w", err)
		}
		h.res.Removed = n
	} else if _, err := h.e.st.Driver.ForgetOrdinals(ctx, tx, h.target.Table, h.id.FileKey); err != nil {
		return err
	}
	return h.e.st.Hit("replace-prepared")
}

// sweepReplaced deletes, inside the completing transaction, the rows the
// file ID last wrote whose keys the new version lacks, when the run's
// operation replaces one by key; the new version's rows are written.
func (a *applier) sweepReplaced(ctx context.Context, tx *sql.Tx) error {
	if !a.replacing() || a.target.Ordinal() {
		return nil
	}
	sw := sink.Sweep{Driver: a.e.st.Driver, Table: a.target.Table, Key: a.target.Key, Seen: a.tables.seen,
		Scope: []sink.Term{{Column: sink.FileColumn, Value: strconv.FormatInt(a.id.FileKey, 10)}}}
	n, err := sw.Apply(ctx, tx, nil)
	if err != nil {
		return fmt.Errorf("delete the replaced version's keys: %w", err)
	}
	if err := a.e.st.Hit("replace-swept"); err != nil {
		return err
	}
	a.res.Removed = n
	return nil
}

// noteReplaced says, once the operation completed, what the replacement
// removed.
func (a *applier) noteReplaced() {
	if !a.replacing() || a.res.Removed == 0 {
		return
	}
	if a.target.Ordinal() {
		a.res.note(a.log, "removed the %s of the replaced version (%s)", english.Plural(a.res.Removed, "row"), ledger.ShortDigest(a.replaces))
		return
	}
	a.res.note(a.log, "deleted %s of the replaced version (%s) that this version lacks", english.Plural(a.res.Removed, "key"), ledger.ShortDigest(a.replaces))
}

// noteSamePath says so when an ordinal import that creates an operation
// adds its rows to a table that holds the rows another file ID wrote from
// the same path: other content (a corrected file, imported as another
// file), or this very content under another file ID (the file ID's
// template changed). A user who meant to correct the file, or to keep one
// copy, has two copies now: the note names the ways to say what the file
// is, and the undo that removes the earlier rows.
func (pl *planner) noteSamePath(ctx context.Context, plan *reader.Plan) error {
	if !pl.target.Ordinal() || pl.snapshot() != nil || pl.replacing() || plan == nil || pl.in.streaming {
		return nil // a stream's name is no path: each content piped in is a file of its own
	}
	ops, err := pl.e.st.Ledger.List(ctx, ledger.Filter{Table: pl.target.Table, State: ledger.Completed, Path: pl.id.Path})
	if err != nil {
		return err
	}
	for _, op := range ops {
		if op.Path != pl.id.Path || op.FileID == pl.id.FileID {
			continue
		}
		rows, adds := english.Plural(op.Rows.Read-op.Rows.Rejected-op.Rows.Superseded, "row"), plan.Rows-plan.Rejected
		undo := fmt.Sprintf("to remove the earlier rows: idemport undo %s --table %s", op.FileID, pl.target.Table)
		if op.ContentDigest == pl.id.ContentDigest {
			pl.res.note(pl.log, "%s already holds %s of this content from %s, imported as file ID %s: this adds %d more under file ID %s; %s",
				pl.target.Table, rows, op.Path, op.FileID, adds, pl.id.FileID, undo)
			return nil
		}
		pl.res.note(pl.log, "%s already holds %s of %s with other content (%s): this adds %d more; use --replace with --file-id '{path}', --key, or --snapshot; %s",
			pl.target.Table, rows, op.Path, ledger.ShortDigest(op.ContentDigest), adds, undo)
		return nil // the newest is enough
	}
	return nil
}
