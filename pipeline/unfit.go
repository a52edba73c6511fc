package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// unfitError is a target table that does not fit the file (sink.Check):
// check says how, hint what to do about it before anything is written.
// The plan refuses such a file before any effect (keeper.refuseUnfit). The
// table may also stop fitting after the plan was stored: altered by hand,
// by another import, or planned by a version that did not refuse what
// this one does. An attempt that meets it while writing cannot write the
// stored plan, nor can any rerun of it: it is refused (refuseLate).
type unfitError struct {
	check error
	hint  string
}

func (e *unfitError) Error() string { return e.check.Error() + e.hint }
func (e *unfitError) Unwrap() error { return e.check }

// late is the error as met while writing, before any row was: the table
// changed since the plan, and made to fit the file again it takes it.
func (e *unfitError) late() string {
	hint := cmp.Or(e.hint, "; nothing was written; import into another table (--table NAME)")
	return e.check.Error() + " (it changed after the file was planned)" + hint + "; or make the table fit the file again and rerun"
}

// fits returns nil when table, the target as a partition transaction
// found it, can take the rows of the plan, else an *unfitError. The plan
// checked the table as it was then; this checks it as it is now.
func (a *applier) fits(table *sink.Table) error {
	schema := a.plan.Schema.Arrow()
	err := sink.Check(table, a.target, schema)
	if err == nil {
		return nil
	}
	if _, eerr := evolve(EvolveNone, a.e.st.Driver.Limits(), a.target, table, schema); errors.As(eerr, new(*unfitError)) {
		return eerr // with the next step
	}
	return &unfitError{check: err}
}

// refuseLate ends the attempt that found its table not fitting the file
// (unfit) while applying the stored plan, with outcome Refused (exit 5):
// no rerun of that plan could write it, so it must not fail (exit 1, "a
// rerun resumes") forever.
//
// When no partition of the operation has committed, nothing of the file
// is in the database: the operation becomes refused, its plan dropped,
// its refusal the table's (Refusal.Unfit), so that a rerun plans the file
// again against the table as it is then (and imports it once the table
// fits, or refuses it before any effect), and one with --evolve or
// another --table starts a new operation. When some have committed (with
// --atomic, into the staging table), those rows stay and the operation
// stays failed, resumable: the message says how many, and that the table
// made to fit again lets a rerun finish, or undo removes them.
func (r *run) refuseLate(ctx context.Context, unfit *unfitError) error {
	h := &r.holding
	if ctx.Err() != nil {
		return h.abandon(ctx, unfit)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var done, total int64
	refused := false
	err := withTx(cctx, h.e.st.DB, func(tx *sql.Tx) error {
		if err := h.e.st.Ledger.Lock(cctx, tx, h.id.Key); err != nil {
			return err
		}
		if err := h.e.st.CP.Release(cctx, tx, h.op, h.attempt.ID); err != nil {
			return err
		}
		p, err := h.e.st.CP.Progress(cctx, tx, h.op, h.attempt.ID)
		if err != nil {
			return err
		}
		done, total = p.Done, p.Total
		if p.Done > 0 || p.Held > 0 {
			return nil // recorded failed, below
		}
		msg := unfit.late()
		body, err := json.Marshal(&Refusal{Rows: r.planRows(), MaxRejects: h.req.MaxRejects, Error: msg, Unfit: true})
		if err != nil {
			return err
		}
		if _, _, err := h.e.st.CP.Drop(cctx, tx, h.op); err != nil {
			return err
		}
		if err := h.e.st.Ledger.RefuseLate(cctx, tx, h.id.Key, string(body)); err != nil {
			return err
		}
		refused = true
		return h.e.st.Ledger.End(cctx, tx, h.attempt.ID, string(Refused), msg, 0, int64(len(h.ap.recovered)))
	})
	if errors.Is(err, ledger.ErrCompleted) {
		return h.completedMeanwhile(cctx, unfit)
	}
	if err != nil {
		h.log.Error("could not record the refusal; the lease will expire instead", "err", err)
		h.res.Outcome = Refused
		return unfit
	}
	if refused {
		h.res.Outcome = Refused
		h.res.Refusal = &Refusal{Rows: r.planRows(), MaxRejects: h.req.MaxRejects, Error: unfit.late(), Unfit: true}
		h.res.Partitions = idemtype.Partitions{Total: total}
		h.log.Warn("refused: the table no longer fits the stored plan; nothing was written", "err", unfit)
		return fmt.Errorf("refused: %s", unfit.late())
	}
	// Rows are in the database, or another attempt is writing them: the
	// operation stays resumable.
	if done == 0 {
		err = fmt.Errorf("refused: %w; the table changed after the file was planned, and another attempt of this import holds partitions of it: rerun once it ends", unfit.check)
	} else {
		where, undo := h.target.Table, fmt.Sprintf("'idemport undo %s --table %s' to remove them", h.id.FileID, h.target.Table)
		if h.req.Mapping.Atomic {
			where = "the staging table of --atomic, none in " + h.target.Table
		}
		if !h.target.Ordinal() {
			undo = fmt.Sprintf("'idemport undo %s --table %s --forget' to end the import keeping them", h.id.FileID, h.target.Table)
		}
		err = fmt.Errorf("refused: %w; the table changed after %d of %s committed rows to %s, which stay: make the table fit the file again and rerun to finish the import, or %s",
			unfit.check, done, english.Plural(total, "partition"), where, undo)
	}
	err = h.abandon(ctx, err)
	if h.res.Outcome == Failed {
		h.res.Outcome = Refused // exit 5: the operation stays resumable
	}
	return err
}

// planRows is the rows of the stored plan the run applies, 0 when it has
// none.
func (r *run) planRows() int64 {
	if r.plan == nil {
		return 0
	}
	return r.plan.Rows
}
