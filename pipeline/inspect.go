package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// PlanReport is what an import of a file would do, computed without writing
// anything.
type PlanReport struct {
	File          string             `json:"file"`
	FileID        string             `json:"file_id"`
	FileKey       int64              `json:"-"` // the lock key: internal
	ContentDigest string             `json:"content_digest"`
	MappingDigest string             `json:"mapping_digest"`
	Mapping       string             `json:"mapping"`
	Table         string             `json:"table"`
	Format        reader.Format      `json:"format"`
	Compression   reader.Compression `json:"compression,omitempty"`
	// Decision is what an import would decide now: create, plan, resume,
	// duplicate, refuse, conflict, busy, supersede, reapply or stale (an
	// older snapshot); or skipped (--min-age), decided before the file is
	// read.
	Decision string `json:"decision"`
	// Would is the outcome an import would have (WouldImport …): the
	// decision, and whether the file, its table or the sweep would be
	// refused.
	Would      string             `json:"would"`
	Detail     string             `json:"detail,omitempty"`
	Schema     reader.Schema      `json:"schema"`
	Rows       int64              `json:"rows"`
	Rejected   int64              `json:"rejected"`
	Superseded int64              `json:"superseded"` // rows a later row of the file with the same key supersedes
	MaxRejects RejectLimit        `json:"max_rejects"`
	Partitions []reader.Partition `json:"partitions"`
	// PartitionRows and PartitionBytes are the bounds the partitions were
	// cut by (a Parquet or Arrow file's are its units, whatever their size).
	PartitionRows  int64 `json:"partition_rows"`
	PartitionBytes int64 `json:"partition_bytes"`
	// GrowTo, when set, is the rows the partitions grew to from
	// PartitionRows (reader.ScanOptions.GrowTo).
	GrowTo  int64           `json:"partition_grow_to,omitempty"`
	Rejects []reader.Reject `json:"first_bad_rows,omitempty"`
	Error   string          `json:"error,omitempty"` // a defect that stops the plan pass
	// ColumnsAdded and ColumnsWidened are the schema changes --evolve
	// would make; Unfit says why the table does not fit the file (the
	// import would refuse it).
	ColumnsAdded   []string `json:"columns_added,omitempty"`
	ColumnsWidened []string `json:"columns_widened,omitempty"`
	Unfit          string   `json:"unfit,omitempty"`
	// Deleted is how many rows a snapshot's sweep would remove were the
	// file imported now (-1: not known for keys of this type).
	Deleted *int64 `json:"deleted,omitempty"`
	// SweepRefused is the refusal of the --max-delete guard, when the
	// sweep would remove more than it allows: the import would end
	// refused (exit 5), nothing deleted, the operation resumable.
	SweepRefused string `json:"sweep_refused,omitempty"`
	// effect says the operation the import would resume has committed
	// partitions: a table that no longer fits it leaves them (refuseLate).
	effect bool
	// badRows is the refusal of a file with more bad rows than
	// --max-rejects allows, as the import would word it (planner.barred).
	badRows string
}

// The outcomes an import would have, as PlanReport.Would says them.
const (
	WouldImport    = "import"    // a new operation (create, supersede, replace, reapply)
	WouldResume    = "resume"    // the stored operation carries on
	WouldDuplicate = "duplicate" // completed with this fingerprint: nothing to do
	WouldRefuse    = "refuse"    // bad rows, a table that does not fit, a limit, or the sweep guard
	WouldConflict  = "conflict"
	WouldBusy      = "busy"
	WouldSkip      = "skip"  // --min-age
	WouldStale     = "stale" // an older snapshot
)

// Refusal says why an import of the file would be refused, or "" when it
// would not: the stored refusal, a defect of the file, a limit of the
// database, bad rows over --max-rejects, a table that does not fit, or a
// sweep over --max-delete.
func (p *PlanReport) Refusal() string {
	switch {
	case p.Decision == ledger.Refuse.String():
		return cmp.Or(p.Detail, "refused before with this fingerprint")
	case p.Error != "":
		return p.Error
	case p.badRows != "":
		return p.badRows
	case p.Unfit != "":
		return p.Unfit
	case p.SweepRefused != "":
		return p.SweepRefused
	}
	return ""
}

// would sets p.Would from its decision and what the plan found.
func (p *PlanReport) would() *PlanReport {
	switch p.Decision {
	case string(Skipped):
		p.Would = WouldSkip
		return p
	case ledger.Stale.String():
		p.Would = WouldStale
		return p
	case ledger.Duplicate.String():
		p.Would = WouldDuplicate
		return p
	case ledger.Conflict.String():
		p.Would = WouldConflict
		return p
	case ledger.Busy.String():
		p.Would = WouldBusy
		return p
	}
	switch {
	case p.Refusal() != "":
		p.Would = WouldRefuse
	case p.Decision == ledger.Plan.String() || p.Decision == ledger.Resume.String():
		p.Would = WouldResume
	default:
		p.Would = WouldImport
	}
	return p
}

// PlanFile identifies and plans the file of req without writing anything:
// the identify and plan stages of an import, and the decision its claim
// would make. When e has no database yet (Options.AllowMissing) the file
// is planned as one never imported, into a table that does not exist.
func PlanFile(ctx context.Context, e *Engine, req Request) (*PlanReport, error) {
	if err := e.st.Ready(ctx); err != nil {
		return nil, err
	}
	r := newRun(e, req)
	defer r.in.close(e.st.Log)
	r.defaults()
	dd, err := r.examine(ctx)
	if young := (*tooYoungError)(nil); errors.As(err, &young) {
		return (&PlanReport{File: r.name(), Table: r.target.Table, Decision: string(Skipped), Detail: young.Error()}).would(), nil
	} else if err != nil {
		return nil, err
	}
	if _, err := r.planner().preflight(); err != nil {
		return nil, err
	}
	rep := &PlanReport{File: r.name(), FileID: r.id.FileID, FileKey: r.id.FileKey, ContentDigest: r.id.ContentDigest,
		MappingDigest: r.id.MappingDigest, Mapping: r.id.Mapping, Table: r.target.Table,
		MaxRejects: r.req.MaxRejects, PartitionRows: r.req.PartitionRows, PartitionBytes: r.req.PartitionBytes, GrowTo: r.growTo}
	inserted, settled := r.claimer().dryDecision(rep, dd)
	if settled {
		return rep.would(), nil
	}
	p, err := r.planner().planPass(ctx, nil)
	defer p.spill.close()
	if p.file != nil {
		rep.Format, rep.Compression = p.file.Format(), p.file.Compression()
	}
	if err == nil {
		err = r.planner().reportPlan(ctx, rep, p, inserted)
	}
	var pe *reader.ParseError
	if errors.As(err, &pe) {
		rep.Error = pe.Error()
	} else if err != nil {
		return nil, err
	}
	if rep.Error == "" {
		if err := r.planner().bars(rep, p); err != nil {
			return nil, err
		}
	}
	return rep.would(), nil
}

// bars fills in rep why the import would refuse the file of plan p for
// the plan alone, as the import decides it (barred), or returns the usage
// error it would end with: a table name over the database's limit, a
// column over one of its limits (rep.Error), more bad rows than
// --max-rejects allows (rep.badRows).
func (pl *planner) bars(rep *PlanReport, p planned) error {
	if err := pl.e.st.Driver.Limits().CheckTable(pl.target.Table); err != nil {
		rep.Error = err.Error()
		return nil
	}
	why := pl.barred(p)
	var pr *planRefusal
	switch {
	case why == nil:
	case !errors.As(why, &pr):
		return why
	case pr.ref.Error != "":
		rep.Error = pr.ref.Error
	default:
		rep.badRows = refusalLine(pr.ref)
	}
	return nil
}

// dryDecision sets rep.Decision (and its Detail) to dd, what an import's
// claim would decide now, and returns the rows the operation it would
// carry on has inserted. settled is true when the import would read
// nothing more (a stale snapshot).
func (cl *claimer) dryDecision(rep *PlanReport, dd decided) (inserted int64, settled bool) {
	op := dd.op
	rep.Decision = dd.decision.String()
	switch dd.decision {
	case ledger.Stale: // nothing is read
		rep.Detail = cl.staleText(dd.newer)
		return 0, true
	case ledger.Conflict:
		what, how := ledger.Difference(op, cl.id)
		rep.Detail = what + " differs: " + how
	case ledger.Supersede:
		rep.Detail = fmt.Sprintf("supersedes the %s operation (%s differs; it had no effect)", op.State, differs(op, cl.id))
	case ledger.Replace:
		rep.Detail = fmt.Sprintf("replaces the version completed on %s (content %s, %s): its %s",
			formatMs(op.CompletedAt), ledger.ShortDigest(op.ContentDigest), english.Plural(op.Rows.Read-op.Rows.Rejected, "row"), cl.replacedWhat())
	case ledger.Resume:
		rep.effect = dd.s.Effect
		inserted = op.Rows.Inserted
		if cl.req.Mapping.Atomic {
			inserted = 0 // its rows wait in the staging table
		}
	case ledger.Reapply:
		rep.Detail = "applies the completed file again"
		if dd.s.TableMissing {
			rep.Detail = "imports the completed file again: its table no longer exists"
		}
	}
	return inserted, false
}

// reportPlan fills in rep what plan p found, and what --evolve and
// --snapshot would do with it.
func (pl *planner) reportPlan(ctx context.Context, rep *PlanReport, p planned, inserted int64) error {
	plan := p.plan
	// JSONL names its columns only in its rows: a mapping column it
	// lacks shows after the plan pass, where import finds it.
	if err := pl.checkColumns(columnNames(plan.Schema)); err != nil {
		return err
	}
	rep.Schema, rep.Rows, rep.Rejected, rep.Partitions, rep.Rejects = plan.Schema, plan.Rows, plan.Rejected, plan.Partitions, plan.Rejects
	rep.Superseded = plan.Superseded
	return pl.dryWriteModes(ctx, rep, p.file, plan, inserted)
}

// dryWriteModes fills in what --evolve and --snapshot would do to the
// existing table, writing nothing: the columns added and widened, the rows
// the sweep would remove, and whether the --max-delete guard would refuse
// that, for an import that applies the file (the operation of which has
// already inserted inserted rows).
func (pl *planner) dryWriteModes(ctx context.Context, rep *PlanReport, f *reader.File, plan *reader.Plan, inserted int64) error {
	if !pl.e.st.Exists() {
		return nil
	}
	t, err := pl.e.st.Driver.Describe(ctx, pl.e.st.DB, pl.target.Table)
	if err != nil || t == nil {
		return err
	}
	if !pl.dryEvolve(rep, t, plan) || pl.snapshot() == nil {
		return nil
	}
	n, live, err := pl.wouldSweep(ctx, t, f, plan)
	if err != nil {
		return err
	}
	rep.Deleted = &n
	switch rep.Decision {
	case ledger.Create.String(), ledger.Plan.String(), ledger.Resume.String(), ledger.Supersede.String(), ledger.Reapply.String(), ledger.Replace.String():
	default:
		return nil // the import would not sweep
	}
	if n < 0 {
		return nil
	}
	return pl.dryDeleteGuard(ctx, rep, plan, n, live, inserted)
}

// dryEvolve fills in the columns --evolve would add to and widen in table
// t for plan, and reports whether t fits the file then; when it does not,
// rep.Unfit says why.
func (pl *planner) dryEvolve(rep *PlanReport, t *sink.Table, plan *reader.Plan) bool {
	ev, err := evolve(pl.req.Mapping.Evolve, pl.e.st.Driver.Limits(), pl.target, t, plan.Schema.Arrow())
	if unfit := (*unfitError)(nil); errors.As(err, &unfit) && rep.effect {
		// As the import would say it (refuseLate): rows are written.
		rep.Unfit = unfit.check.Error() + "; the table changed after partitions of the file committed rows, which stay: make the table fit the file again and rerun to finish the import, or undo it ('idemport undo')"
		return false
	}
	if err != nil {
		rep.Unfit = err.Error()
		return false
	}
	for _, a := range ev.add {
		rep.ColumnsAdded = append(rep.ColumnsAdded, a.Name)
	}
	for _, w := range ev.widen {
		rep.ColumnsWidened = append(rep.ColumnsWidened, w.column)
	}
	return true
}

// dryDeleteGuard sets rep.SweepRefused when the --max-delete guard would
// refuse a sweep of missing rows (of live ones in the scope; by key) for
// plan, the operation having inserted inserted rows already.
func (pl *planner) dryDeleteGuard(ctx context.Context, rep *PlanReport, plan *reader.Plan, missing, live, inserted int64) error {
	var before int64
	if pl.target.Ordinal() {
		// The sweep counts the file's rows in the table: all of them,
		// once applied.
		live = missing + plan.Rows - plan.Rejected
	} else {
		// By key it counts the rows the scope held before the operation
		// wrote any: as its first partition stored them (a resumed one),
		// or those now.
		var stored int64
		var ok bool
		if rep.Decision == ledger.Resume.String() {
			var err error
			if stored, ok, err = pl.e.st.Ledger.ScopeRows(ctx, pl.e.st.DB, pl.id.Key); err != nil {
				return err
			}
		}
		before = guardBefore(stored, ok, live, inserted)
	}
	if gerr := deleteGuard(pl.req.MaxDelete, pl.target, missing, live, before, plan); gerr != nil {
		rep.SweepRefused = gerr.Error()
	}
	return nil
}

// keyColumns returns the indices of the key columns in the plan's schema,
// or nil when a key column has a type whose text the file and the table
// may spell differently (neither int64 nor string).
func (pl *planner) keyColumns(plan *reader.Plan) []int {
	schema := plan.Schema.Arrow()
	var idx []int
	for _, k := range pl.target.Key {
		i := schema.FieldIndices(k)[0]
		if kind := idemtype.TypeOf(schema.Field(i)); kind != idemtype.Int64 && kind != idemtype.String {
			return nil
		}
		idx = append(idx, i)
	}
	return idx
}

// fileKeys reads the keys of the file's rows (their columns idx) into a
// set of their texts.
func fileKeys(f *reader.File, plan *reader.Plan, idx []int) (map[string]bool, error) {
	keys := map[string]bool{}
	err := store.EachBatch(f, plan, 1<<16, func(rec arrow.RecordBatch) error {
		for row := range int(rec.NumRows()) {
			var k strings.Builder
			for _, c := range idx {
				k.WriteString(rec.Column(c).ValueStr(row))
				k.WriteByte(0)
			}
			keys[k.String()] = true
		}
		return nil
	})
	return keys, err
}

// wouldSweep counts the live rows of the snapshot's scope whose key the
// file lacks (in ordinal mode: the rows of other files), reading the
// file's keys into memory; -1 when the key has a type whose text the file
// and the table may spell differently. By key it also returns how many
// live rows the scope holds.
func (pl *planner) wouldSweep(ctx context.Context, t *sink.Table, f *reader.File, plan *reader.Plan) (missing, live int64, err error) {
	s := pl.snapshot()
	if s.Soft && t.Column(sink.DeletedColumn) == nil {
		s = &Snapshot{Scope: s.Scope} // no row is marked yet
	}
	if pl.target.Ordinal() {
		missing, _, err := sink.Sweep{Driver: pl.e.st.Driver, Table: pl.target.Table, FileKey: pl.id.FileKey, Scope: s.Scope, Soft: s.Soft}.Count(ctx, pl.e.st.DB)
		return missing, 0, err
	}
	idx := pl.keyColumns(plan)
	if idx == nil {
		return -1, 0, nil
	}
	keys, err := fileKeys(f, plan, idx)
	if err != nil {
		return 0, 0, err
	}
	sw := sink.Sweep{Driver: pl.e.st.Driver, Table: pl.target.Table, Key: pl.target.Key, Scope: s.Scope, Soft: s.Soft}
	err = pl.e.st.Driver.SweepKeys(ctx, pl.e.st.DB, sw, func(vals []sql.NullString) error {
		live++
		var k strings.Builder
		for _, v := range vals {
			k.WriteString(v.String)
			k.WriteByte(0)
		}
		if !keys[k.String()] {
			missing++
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return missing, live, nil
}
