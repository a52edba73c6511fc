package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
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
	PartitionRows  int64           `json:"partition_rows"`
	PartitionBytes int64           `json:"partition_bytes"`
	Rejects        []reader.Reject `json:"first_bad_rows,omitempty"`
	Error          string          `json:"error,omitempty"` // a defect that stops the plan pass
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
	case !p.MaxRejects.Allows(p.Rejected, p.Rows):
		return fmt.Sprintf("%d of %d rows are bad (at most %s allowed)", p.Rejected, p.Rows, p.MaxRejects)
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
	r := newRun(e, req)
	defer r.closeSource()
	r.defaults()
	ident, err := r.identify(ctx)
	if young := (*tooYoungError)(nil); errors.As(err, &young) {
		return (&PlanReport{File: r.name(), Table: r.target.Table, Decision: string(Skipped), Detail: young.Error()}).would(), nil
	} else if err != nil {
		return nil, err
	}
	r.identified(ident)
	if _, err := r.preflight(); err != nil {
		return nil, err
	}
	rep := &PlanReport{File: r.name(), FileID: r.id.FileID, FileKey: r.id.FileKey, ContentDigest: r.id.ContentDigest,
		MappingDigest: r.id.MappingDigest, Mapping: r.id.Mapping, Table: r.target.Table, Decision: ledger.Create.String(),
		MaxRejects: r.req.MaxRejects, PartitionRows: r.req.PartitionRows, PartitionBytes: r.req.PartitionBytes}
	inserted, settled, err := r.dryDecide(ctx, rep)
	if err != nil {
		return nil, err
	}
	if settled {
		return rep.would(), nil
	}
	p, err := r.planPass(ctx, nil)
	defer p.spill.close()
	if p.file != nil {
		rep.Format, rep.Compression = p.file.Format(), p.file.Compression()
	}
	if err == nil {
		err = r.reportPlan(ctx, rep, p, inserted)
	}
	var pe *reader.ParseError
	if errors.As(err, &pe) {
		rep.Error = pe.Error()
	} else if err != nil {
		return nil, err
	}
	if rep.Error == "" {
		// The limits import refuses the file for.
		l := e.sink.Limits()
		if lerr := errors.Join(l.CheckTable(r.target.Table), l.CheckColumns(r.target, rep.Schema.Arrow())); lerr != nil {
			rep.Error = lerr.Error()
		}
	}
	return rep.would(), nil
}

// dryDecide sets rep.Decision (and its Detail) to what an import's claim
// would decide now, and returns the rows the operation it would carry on
// has inserted. settled is true when the import would read nothing more
// (a stale snapshot). Without a database the file is new.
func (r *run) dryDecide(ctx context.Context, rep *PlanReport) (inserted int64, settled bool, err error) {
	if !r.e.Exists() {
		return 0, false, nil
	}
	op, now, err := r.e.ledger.Get(ctx, r.e.db, r.id.Key)
	if err != nil {
		return 0, false, err
	}
	s, err := r.situation(ctx, r.e.db, op, now)
	if err != nil {
		return 0, false, err
	}
	d, _ := ledger.Decide(s)
	rep.Decision = d.String()
	switch d {
	case ledger.Stale: // nothing is read
		rep.Detail = r.staleText()
		return 0, true, nil
	case ledger.Conflict:
		what, how := ledger.Difference(op, r.id)
		rep.Detail = what + " differs: " + how
	case ledger.Supersede:
		rep.Detail = fmt.Sprintf("supersedes the %s operation (%s differs; it had no effect)", op.State, differs(op, r.id))
	case ledger.Replace:
		r.replaces = op.ContentDigest
		rep.Detail = fmt.Sprintf("replaces the version completed on %s (content %s, %s): its %s",
			formatMs(op.CompletedAt), ledger.ShortDigest(op.ContentDigest), english.Plural(op.Rows.Read-op.Rows.Rejected, "row"), r.replacedWhat())
	case ledger.Resume:
		inserted = op.Rows.Inserted
		if r.req.Mapping.Atomic {
			inserted = 0 // its rows wait in the staging table
		}
	case ledger.Reapply:
		rep.Detail = "applies the completed file again"
		if s.TableMissing {
			rep.Detail = "imports the completed file again: its table no longer exists"
		}
	}
	return inserted, false, nil
}

// reportPlan fills in rep what plan p found, and what --evolve and
// --snapshot would do with it.
func (r *run) reportPlan(ctx context.Context, rep *PlanReport, p planned, inserted int64) error {
	plan := p.plan
	// JSONL names its columns only in its rows: a mapping column it
	// lacks shows after the plan pass, where import finds it.
	if err := r.checkColumns(columnNames(plan.Schema)); err != nil {
		return err
	}
	rep.Schema, rep.Rows, rep.Rejected, rep.Partitions, rep.Rejects = plan.Schema, plan.Rows, plan.Rejected, plan.Partitions, plan.Rejects
	rep.Superseded = plan.Superseded
	return r.dryWriteModes(ctx, rep, p.file, plan, inserted)
}

// OperationStatus is an operation with the state of its partitions.
type OperationStatus struct {
	ledger.Operation
	Partitions checkpoint.Progress
	// Holders lists attempts holding leases on its unfinished partitions.
	Holders []string
	// Live lists the attempts whose lease (planning or partition) has not
	// expired: those still running.
	Live []string
	// Leases describes each attempt holding a lease on the operation (its
	// partitions', or its planning lease) as an import would judge it.
	Leases []Lease
}

// Lease is an attempt that holds a lease on an operation: where it runs,
// and whether it runs, is stopped or is gone (holderState).
type Lease struct {
	Attempt string `json:"attempt_id"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// Planning is true for the operation's planning lease.
	Planning bool `json:"planning,omitempty"`
	// State is HolderRunning, HolderStopped or HolderGone.
	State string `json:"state"`
}

// Holding returns how the operation's lease holders stand together:
// HolderRunning when one of them runs, else HolderStopped when one is
// stopped, else HolderGone; "" when none holds a lease.
func (o OperationStatus) Holding() string {
	state := ""
	for _, l := range o.Leases {
		switch {
		case l.State == HolderRunning:
			return HolderRunning
		case l.State == HolderStopped, state == "":
			state = l.State
		}
	}
	return state
}

// AttemptOutcome is how attempt a ended, in the words history, JSON and
// metrics share: imported, resumed, failed, interrupted, died, undone...
// as recorded. An attempt that recorded no end and holds a lease on op is
// as its Lease says (running, stopped, gone); one that holds none "died"
// (its process was killed, or its lease expired and was taken over).
func AttemptOutcome(a ledger.AttemptRecord, op OperationStatus) string {
	if a.Outcome != "" {
		return a.Outcome
	}
	for _, l := range op.Leases {
		if l.Attempt == a.ID {
			return l.State
		}
	}
	if slices.Contains(op.Live, a.ID) {
		return HolderRunning
	}
	return "died"
}

// Status lists operations matching f, newest first. Without a state in f,
// undone operations are left out: they are resolved, and shown by History.
// An Engine without a database has none.
func (e *Engine) Status(ctx context.Context, f ledger.Filter) ([]OperationStatus, error) {
	if !e.Exists() {
		return nil, nil
	}
	ops, err := e.ledger.List(ctx, f)
	if err != nil {
		return nil, err
	}
	if f.State == "" {
		ops = slices.DeleteFunc(ops, func(op ledger.Operation) bool { return op.State == ledger.Undone })
	}
	return e.withProgress(ctx, ops)
}

// withProgress adds the state of their partitions to operations.
func (e *Engine) withProgress(ctx context.Context, ops []ledger.Operation) ([]OperationStatus, error) {
	out := make([]OperationStatus, len(ops))
	now := time.Now().UnixMilli()
	for i, op := range ops {
		out[i].Operation = op
		if op.LeaseAttempt != "" && op.LeaseExpires > now {
			out[i].Live = append(out[i].Live, op.LeaseAttempt)
		}
		k := checkpoint.Op{Table: op.Table, FileID: op.FileID}
		p, err := e.cp.Progress(ctx, e.db, k, "")
		if err != nil {
			return nil, err
		}
		out[i].Partitions = p
		if p.Held > 0 {
			parts, err := e.cp.Partitions(ctx, e.db, k)
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for _, pt := range parts {
				if !pt.Done && pt.LeaseAttempt != "" && !seen[pt.LeaseAttempt] {
					seen[pt.LeaseAttempt] = true
					out[i].Holders = append(out[i].Holders, pt.LeaseAttempt)
					if pt.LeaseExpires > now && !slices.Contains(out[i].Live, pt.LeaseAttempt) {
						out[i].Live = append(out[i].Live, pt.LeaseAttempt)
					}
				}
			}
		}
		if op.State == ledger.Processing {
			if err := e.judgeLeases(ctx, &out[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// judgeLeases fills o.Leases: each attempt holding a lease on o, with
// where it runs and how it stands.
func (e *Engine) judgeLeases(ctx context.Context, o *OperationStatus) error {
	holders := slices.Clone(o.Holders)
	planning := ""
	if !o.Planned && o.LeaseAttempt != "" && !slices.Contains(holders, o.LeaseAttempt) {
		planning = o.LeaseAttempt
		holders = append(holders, planning)
	}
	for _, a := range holders {
		host, pid, start, ok, err := e.ledger.Process(ctx, e.db, a)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		o.Leases = append(o.Leases, Lease{Attempt: a, Host: host, PID: pid, Planning: a == planning,
			State: holderState(host, pid, start, slices.Contains(o.Live, a))})
	}
	return nil
}

// History returns the operations of a file (given as a path, which is
// hashed, or as a file ID), current ones first and then past ones
// (superseded, replaced, undone or abandoned: replaced by a newer
// operation), each with its attempts, oldest attempt first. The past
// operations of the file IDs of the current ones found are among them.
func (e *Engine) History(ctx context.Context, fileOrID string, table string) ([]OperationStatus, [][]ledger.AttemptRecord, error) {
	if err := e.present(); err != nil {
		return nil, nil, err
	}
	filters, err := e.fileFilters(ctx, fileOrID, table)
	if err != nil {
		return nil, nil, err
	}
	ops, err := e.listAll(ctx, filters, e.ledger.List)
	if err != nil {
		return nil, nil, err
	}
	past, err := e.listAll(ctx, filters, e.ledger.Past)
	if err != nil {
		return nil, nil, err
	}
	// A file found by its content shows the versions its file ID had
	// before (replaced, superseded) too.
	for _, op := range ops {
		earlier, err := e.ledger.Past(ctx, ledger.Filter{Table: op.Table, FileID: op.FileID})
		if err != nil {
			return nil, nil, err
		}
		for _, p := range earlier {
			if !slices.ContainsFunc(past, func(q ledger.Operation) bool { return q.Key == p.Key && q.CreatedAt == p.CreatedAt }) {
				past = append(past, p)
			}
		}
	}
	if len(ops)+len(past) == 0 {
		return nil, nil, fmt.Errorf("no operation for %s: it is not a file here, a file ID, a path an import has seen, or the start of a file ID", fileOrID)
	}
	var attempts [][]ledger.AttemptRecord
	for i, op := range append(ops, past...) {
		as, err := e.ledger.Attempts(ctx, op.Key)
		if err != nil {
			return nil, nil, err
		}
		// Attempts are kept per (table, file ID): give each operation
		// those of its own lifetime.
		var own []ledger.AttemptRecord
		for _, a := range as {
			if a.StartedAt >= op.CreatedAt && (i < len(ops) || a.StartedAt < op.UpdatedAt) {
				own = append(own, a)
			}
		}
		attempts = append(attempts, own)
	}
	st, err := e.withProgress(ctx, ops)
	if err != nil {
		return nil, nil, err
	}
	for _, op := range past {
		st = append(st, OperationStatus{Operation: op})
	}
	return st, attempts, nil
}

// Operations returns the current operations of a file (given as a path,
// which is hashed, or as a file ID), or an error when there are none.
func (e *Engine) Operations(ctx context.Context, fileOrID string, table string) ([]ledger.Operation, error) {
	if err := e.present(); err != nil {
		return nil, err
	}
	filters, err := e.fileFilters(ctx, fileOrID, table)
	if err != nil {
		return nil, err
	}
	ops, err := e.listAll(ctx, filters, e.ledger.List)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no operation for %s", fileOrID)
	}
	return ops, nil
}

// listAll lists, with list, the operations matching any of filters.
func (e *Engine) listAll(ctx context.Context, filters []ledger.Filter, list func(context.Context, ledger.Filter) ([]ledger.Operation, error)) ([]ledger.Operation, error) {
	var out []ledger.Operation
	for _, f := range filters {
		ops, err := list(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, ops...)
	}
	return out, nil
}

// fileFilters select the operations of a file given as an existing path
// (by its content digest), as a file ID, as a path the ledger has seen it
// under (moved away since), or as an unambiguous prefix of a file ID, in
// that order.
func (e *Engine) fileFilters(ctx context.Context, fileOrID string, table string) ([]ledger.Filter, error) {
	if st, err := os.Stat(fileOrID); err == nil && !st.IsDir() {
		src, err := reader.OpenFileSource(fileOrID)
		if err != nil {
			return nil, err
		}
		defer src.Close()
		digests, err := reader.Digest(ctx, src, nil)
		if err != nil {
			return nil, err
		}
		filters := []ledger.Filter{{Table: table, Digest: digests.Content}}
		if digests.Stored != digests.Content {
			filters = append(filters, ledger.Filter{Table: table, Digest: digests.Stored})
		}
		return filters, nil
	}
	byID := ledger.Filter{Table: table, FileID: fileOrID}
	candidates := []ledger.Filter{byID, {Table: table, Path: fileOrID}}
	if remote.IsURL(fileOrID) {
		// A remote input is recorded under its URL, credentials masked.
		candidates = append(candidates, ledger.Filter{Table: table, Path: remote.Redact(fileOrID)})
	} else if clean := filepath.Clean(fileOrID); clean != fileOrID {
		candidates = append(candidates, ledger.Filter{Table: table, Path: clean})
	}
	for _, f := range candidates {
		ops, err := e.matching(ctx, f)
		if err != nil {
			return nil, err
		}
		if len(ops) > 0 {
			return []ledger.Filter{f}, nil
		}
	}
	ops, err := e.matching(ctx, ledger.Filter{Table: table, FileIDPrefix: fileOrID})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, op := range ops {
		if !slices.Contains(ids, op.FileID) {
			ids = append(ids, op.FileID)
		}
	}
	switch {
	case len(ids) == 1:
		return []ledger.Filter{{Table: table, FileID: ids[0]}}, nil
	case len(ids) > 1:
		n := len(ids)
		slices.Sort(ids)
		if n > 5 {
			ids = append(ids[:5], "…")
		}
		return nil, usagef("%s is the start of %d file IDs: %s; give more of it", fileOrID, n, strings.Join(ids, ", "))
	}
	return []ledger.Filter{byID}, nil // matches nothing: the caller says so
}

// matching lists the current and past operations matching f.
func (e *Engine) matching(ctx context.Context, f ledger.Filter) ([]ledger.Operation, error) {
	ops, err := e.ledger.List(ctx, f)
	if err != nil {
		return nil, err
	}
	past, err := e.ledger.Past(ctx, f)
	return append(ops, past...), err
}

// Rejects returns the stored rejects of operation k, in ordinal order.
func (e *Engine) Rejects(ctx context.Context, k ledger.Key) ([]ledger.Reject, error) {
	if err := e.present(); err != nil {
		return nil, err
	}
	return e.ledger.Rejects(ctx, e.db, k)
}

// dryWriteModes fills in what --evolve and --snapshot would do to the
// existing table, writing nothing: the columns added and widened, the rows
// the sweep would remove, and whether the --max-delete guard would refuse
// that, for an import that applies the file (the operation of which has
// already inserted inserted rows).
func (r *run) dryWriteModes(ctx context.Context, rep *PlanReport, f *reader.File, plan *reader.Plan, inserted int64) error {
	if !r.e.Exists() {
		return nil
	}
	t, err := r.e.sink.Describe(ctx, r.e.db, r.target.Table)
	if err != nil || t == nil {
		return err
	}
	ev, err := r.evolve(t, plan.Schema.Arrow())
	if err != nil {
		rep.Unfit = err.Error()
		return nil
	}
	for _, a := range ev.add {
		rep.ColumnsAdded = append(rep.ColumnsAdded, a.Name)
	}
	for _, w := range ev.widen {
		rep.ColumnsWidened = append(rep.ColumnsWidened, w.column)
	}
	s := r.snapshot()
	if s == nil {
		return nil
	}
	n, live, err := r.wouldSweep(ctx, t, f, plan)
	if err != nil {
		return err
	}
	rep.Deleted = &n
	switch rep.Decision {
	case ledger.Create.String(), ledger.Plan.String(), ledger.Resume.String(), ledger.Supersede.String(), ledger.Reapply.String(), ledger.Replace.String():
	default:
		return nil // the import would not sweep
	}
	if n >= 0 {
		var before int64
		if r.target.Ordinal() {
			// The sweep counts the file's rows in the table: all of
			// them, once applied.
			live = n + plan.Rows - plan.Rejected
		} else {
			// By key it counts the rows the scope held before the
			// operation wrote any: as its first partition stored them
			// (a resumed one), or those now.
			var stored int64
			var ok bool
			if rep.Decision == ledger.Resume.String() {
				if stored, ok, err = r.e.ledger.ScopeRows(ctx, r.e.db, r.id.Key); err != nil {
					return err
				}
			}
			before = guardBefore(stored, ok, live, inserted)
		}
		if gerr := r.deleteGuard(n, live, before, plan); gerr != nil {
			rep.SweepRefused = gerr.Error()
		}
	}
	return nil
}

// wouldSweep counts the live rows of the snapshot's scope whose key the
// file lacks (in ordinal mode: the rows of other files), reading the
// file's keys into memory; -1 when the key has a type whose text the file
// and the table may spell differently. By key it also returns how many
// live rows the scope holds.
func (r *run) wouldSweep(ctx context.Context, t *sink.Table, f *reader.File, plan *reader.Plan) (missing, live int64, err error) {
	s := r.snapshot()
	if s.Soft && t.Column(sink.DeletedColumn) == nil {
		s = &Snapshot{Scope: s.Scope} // no row is marked yet
	}
	if r.target.Ordinal() {
		missing, _, err := sink.Sweep{Driver: r.e.sink, Table: r.target.Table, FileKey: r.id.FileKey, Scope: s.Scope, Soft: s.Soft}.Count(ctx, r.e.db)
		return missing, 0, err
	}
	schema := plan.Schema.Arrow()
	var idx []int
	for _, k := range r.target.Key {
		i := schema.FieldIndices(k)[0]
		if kind := idemtype.TypeOf(schema.Field(i)); kind != idemtype.Int64 && kind != idemtype.String {
			return -1, 0, nil
		}
		idx = append(idx, i)
	}
	keys := map[string]bool{}
	err = eachBatch(f, plan, 1<<16, func(rec arrow.RecordBatch) error {
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
	if err != nil {
		return 0, 0, err
	}
	sw := sink.Sweep{Driver: r.e.sink, Table: r.target.Table, Key: r.target.Key, Scope: s.Scope, Soft: s.Soft}
	err = r.e.sink.SweepKeys(ctx, r.e.db, sw, func(vals []sql.NullString) error {
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
