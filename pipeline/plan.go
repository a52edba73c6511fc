package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// storedPlan is the body of a stored plan (store.Plan).
type storedPlan = store.Plan

// planInput is what the plan pass is told about the target: the types it
// fixes, and what the target's columns can hold.
type planInput struct {
	types  map[string]idemtype.Type
	limits map[string]reader.Limit
	jsonb  bool
	// rules are the database's value rules (sink.Limits.Rules), which
	// limits and jsonb refer to; its driver gives the same every time.
	rules idemtype.ValueRules
	// widens are the columns read as the existing table's numeric type
	// that --evolve widen would infer from the file instead (and widen).
	widens map[string]bool
}

// equal reports whether a plan pass given p decides as one given o.
func (p planInput) equal(o planInput) bool {
	return p.types != nil && o.types != nil && maps.Equal(p.types, o.types) && maps.Equal(p.limits, o.limits) && p.jsonb == o.jsonb
}

// maxReported is how many bad rows a refusal report lists.
const maxReported = 20

// readerOptions are the reader options of the mapping, with types fixed and
// values checked as in.
func (pl *planner) readerOptions(in planInput) reader.Options {
	m := pl.req.Mapping
	return reader.Options{Format: m.Format, Delimiter: m.Delimiter, Quotes: m.Quotes, Types: in.types, NotNull: m.Key, Exact: m.Key, Key: m.Key, Version: m.Version,
		Limits: in.limits, Rules: in.rules, AllJSON: in.jsonb,
		SkipLines: m.SkipLines, NoHeader: m.NoHeader, Names: m.Names, Select: m.Select, Rename: m.Rename, Null: m.Null, Encoding: m.Encoding, Sheet: m.Sheet,
		InferDates: true} // mapping version 2; a plan stored under version 1 fixes every type
}

// checkColumns reports mapping columns that the file does not have. It is a
// usage error: the command, not the file, is wrong.
func (pl *planner) checkColumns(names []string) error {
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	m := pl.req.Mapping
	var missing []string
	for _, n := range sortedNames(m.Columns) {
		if !have[n] {
			missing = append(missing, fmt.Sprintf("--column %s", n))
		}
	}
	for _, k := range m.Key {
		if !have[k] {
			missing = append(missing, fmt.Sprintf("--key %s", k))
		}
	}
	if m.Version != "" && !have[m.Version] {
		missing = append(missing, fmt.Sprintf("--version-col %s", m.Version))
	}
	if m.Snapshot != nil {
		for _, t := range m.Snapshot.Scope {
			if !have[t.Column] {
				missing = append(missing, fmt.Sprintf("--snapshot-scope %s", t.Column))
			}
		}
	}
	if len(missing) > 0 {
		return usagef("%s: not a column of %s (it has %s)", strings.Join(missing, ", "), pl.name(), strings.Join(names, ", "))
	}
	for _, n := range names {
		if strings.HasPrefix(n, sink.Reserved) {
			return usagef("column %q of %s uses the prefix %s, which idemport keeps for its lineage columns", n, pl.name(), sink.Reserved)
		}
	}
	return nil
}

// columnNames returns the names of s's columns, in order.
func columnNames(s reader.Schema) []string {
	names := make([]string, len(s))
	for i, c := range s {
		names[i] = c.Name
	}
	return names
}

// textFormat reports whether the file's format is text (CSV, TSV, JSONL),
// whose values take the types they are read as.
func (h *holding) textFormat() bool {
	return isTextFormat(h.req.Mapping.Format, h.name())
}

// isTextFormat says whether a file of format f (empty: told by its name)
// is text.
func isTextFormat(f reader.Format, name string) bool {
	if f == "" {
		f, _, _ = reader.Detect(formatName(name))
	}
	return f == reader.CSV || f == reader.TSV || f == reader.JSONL || f == reader.XLSX
}

// preflight checks, before anything is claimed, what can be checked from the
// file's header: the mapping's columns must exist. It returns a note for
// the result, when the header looks like data.
func (pl *planner) preflight() (note string, err error) {
	if pl.in.obj != nil && pl.quick && !pl.req.Mapping.namesColumns() {
		// An object hashed before was read before: its header holds no
		// reserved name, and the mapping names no column to look for, so
		// a rerun costs its HEAD request alone.
		return "", nil
	}
	f, err := pl.in.open(pl.readerOptions(planInput{}))
	if errors.Is(err, reader.ErrOption) {
		return "", &UsageError{Err: err}
	}
	if err != nil {
		return "", nil // a bad header is the file's defect: the plan pass refuses it
	}
	if f.HeaderLooksLikeData() && !pl.req.Mapping.NoHeader {
		note = fmt.Sprintf("the header of %s (%s) looks like data: if the file has no header, import it with --no-header (and --columns to name them)",
			pl.name(), strings.Join(f.Header(), ","))
	}
	if h := f.Header(); h != nil {
		return note, pl.checkColumns(h)
	}
	return note, nil
}

// planInputs returns what the plan pass is told: the types forced with
// --column and, for text, those of the table the rows go into, which it
// also returns (nil when it does not exist yet), and what that table's
// columns can hold (or, for a new table, what the database's json holds).
// Without a database the table does not exist yet.
func (pl *planner) planInputs(ctx context.Context) (planInput, *sink.Table, error) {
	types := map[string]idemtype.Type{}
	for n, t := range pl.req.Mapping.Columns {
		types[n] = t
	}
	in := planInput{types: types, rules: pl.e.st.Driver.Limits().Rules}
	if err := pl.e.st.Driver.Limits().CheckTable(pl.target.Table); err != nil {
		// The name would be cut short: describe nothing under it.
		return in, nil, nil
	}
	var existing *sink.Table
	if pl.e.st.Exists() {
		var err error
		if existing, err = pl.e.st.Driver.Describe(ctx, pl.e.st.DB, pl.target.Table); err != nil {
			return in, nil, err
		}
	}
	if existing == nil {
		in.jsonb = pl.e.st.Driver.Limits().JSONB
		in.limits = keyLimits(pl.target, pl.e.st.Driver.Limits())
	} else {
		in.limits = columnLimits(existing)
	}
	if existing != nil && pl.textFormat() {
		// Text is validated against the types of the table it goes into;
		// typed formats (Parquet, Arrow) carry their own types, which the
		// table check compares with the table's.
		wide := tableTypes(existing, true)
		for name, typ := range tableTypes(existing, pl.req.Mapping.Evolve == EvolveWiden) {
			if _, forced := types[name]; !forced {
				types[name] = typ
				// A key column the database cannot widen is no column
				// --evolve widen would widen (evolve refuses it).
				if _, kept := wide[name]; !kept && !fixedKey(pl.e.st.Driver.Limits(), existing, name) {
					if in.widens == nil {
						in.widens = map[string]bool{}
					}
					in.widens[name] = true
				}
			}
		}
	}
	return in, existing, nil
}

// tableTypes returns the types a text file's columns are read as when it
// goes into the existing table t (nil when there is none), unless forced:
// each column's own type, and the file's text for a type idemport does not
// produce (date, uuid, inet, a domain…), for the database to parse. With
// --evolve widen (widen) the int64, float64 and decimal columns are left
// out: those are inferred from the file, and a column that no longer fits
// is widened.
func tableTypes(t *sink.Table, widen bool) map[string]idemtype.Type {
	if t == nil {
		return nil
	}
	out := map[string]idemtype.Type{}
	for _, c := range t.Columns {
		switch {
		case widen && (c.Kind == idemtype.Int64 || c.Kind == idemtype.Float64 || c.Kind == idemtype.Decimal):
		case c.Kind == idemtype.Unknown:
			out[c.Name] = idemtype.String
		default:
			out[c.Name] = c.Kind
		}
	}
	return out
}

// keyLimits returns the limits of the key columns of a table the driver
// will create for tg (nil when it bounds no key, or in ordinal mode): the
// characters of text each holds (sink.Limits.KeyChars), so that a longer
// value is a bad row of the plan, never cut short nor a failed write.
func keyLimits(tg sink.Target, l sink.Limits) map[string]reader.Limit {
	chars := l.KeyChars(len(tg.Key))
	if chars == 0 {
		return nil
	}
	out := map[string]reader.Limit{}
	for _, k := range tg.Key {
		out[k] = reader.Limit{MaxChars: chars, Key: true, Table: tg.Table}
	}
	return out
}

// columnLimits returns the limits of t's columns that have any.
func columnLimits(t *sink.Table) map[string]reader.Limit {
	out := map[string]reader.Limit{}
	for _, c := range t.Columns {
		if strings.HasPrefix(c.Name, sink.Reserved) {
			continue
		}
		l := reader.Limit{MaxChars: c.MaxChars, Decimal: c.Numeric, Precision: c.Precision, Scale: c.Scale, NotNull: c.NotNull,
			TimeUnit: c.TimeUnit, TimeTruncates: c.TimeTruncates}
		if c.IntBits > 0 && c.IntBits < 64 {
			l.MinInt, l.MaxInt = -1<<(c.IntBits-1), 1<<(c.IntBits-1)-1
		}
		if l == (reader.Limit{}) && !c.JSONB {
			continue
		}
		l.JSON, l.Table = c.JSONB, t.Name
		out[c.Name] = l
	}
	return out
}

// scan runs the plan pass over the file read with types fixed, sharing the
// read of the hash under way when shared is not nil. digest, if set,
// receives the digest of the data the pass decoded
// (reader.ScanOptions.ContentDigest). The plan lists the first bad rows;
// the spill returned, which the caller must close, has every one that the
// quarantine is to keep. cut, if set, is told each partition the pass
// finishes before its end (reader.ScanOptions.Partitioned).
func (pl *planner) scan(ctx context.Context, in planInput, shared *reader.HashRead, digest func(string), progress func(b, rows int64), cut func(reader.Cut)) (*reader.File, *reader.Plan, *rejectSpill, error) {
	tmp, err := pl.req.keySpillDir()
	if err != nil {
		return nil, nil, nil, err
	}
	rejectsDir, err := pl.req.rejectSpillDir()
	if err != nil {
		return nil, nil, nil, err
	}
	f, err := pl.in.open(pl.readerOptions(in))
	if err != nil {
		return nil, nil, nil, err
	}
	spill := newRejectSpill(pl.req.MaxRejects, rejectsDir)
	plan, err := f.Scan(ctx, reader.ScanOptions{
		PartitionRows:  pl.req.PartitionRows,
		GrowTo:         pl.growTo,
		PartitionBytes: pl.req.PartitionBytes,
		KeepRejects:    maxReported,
		Spill:          spill.add,
		Progress:       progress,
		Shared:         shared,
		ContentDigest:  digest,
		TempDir:        tmp,
		KeysHeld:       pl.req.KeysHeld,
		Partitioned:    cut,
	})
	if err != nil {
		spill.close()
		spill = nil
	}
	return f, plan, spill, err
}

// planner is the plan pass of an attempt: it runs the pass on the file of
// its holding's identity, as the target table asks, or takes the pass
// started while the file was hashed (spec), and returns the plan (planned);
// a stored plan it reads back (loadPlan). An import keeps the plan it
// returns (keeper); plan and --dry-run report it (reportPlan); verify reads
// the file as it plans it.
type planner struct {
	*holding
	spec       *speculation // the plan pass identify started on the hash's read, if any
	sharesRead bool         // the run plans while hashing (see fillSpool)
	// asked is what planInputs returned as the plan stage began (an
	// overlap's start asked it), which planPass takes instead of asking
	// again; nil: it asks.
	asked *askedInputs
}

// askedInputs is a result of planInputs.
type askedInputs struct {
	in       planInput
	existing *sink.Table
}

// planner returns the run's plan stage.
func (r *run) planner() *planner {
	return &planner{holding: &r.holding, spec: r.spec, sharesRead: r.sharesRead}
}

// keeper is the plan stage of an import: it runs its planner's plan pass
// and keeps the plan that returns, stored for every later attempt with
// the tables its rows go through, or refuses the file for it (planFile).
type keeper struct {
	*planner
	ov    *overlap // writing while the plan pass runs, if it does (nil: not)
	early *early   // the overlap's transaction begun before the claim, if it was (startOverlap takes it or rolls it back)
}

// keeper returns the run's plan stage as an import runs it.
func (r *run) keeper() *keeper {
	return &keeper{planner: r.planner(), early: r.early}
}

// planned is what the plan stage makes of a file: the plan pass's result,
// run as the target table asks. An import stores it or refuses the file
// for it; plan and --dry-run report it.
type planned struct {
	inputs   planInput
	existing *sink.Table // the table the rows go into; nil when it does not exist yet or there is no database
	file     *reader.File
	plan     *reader.Plan
	spill    *rejectSpill // every bad row the quarantine is to keep; the caller closes it
	// speculated says the plan is the speculation's, the pass started
	// while the file was hashed.
	speculated bool
}

// planPass is the plan stage: it tells the plan pass what the target table
// holds and runs it, or takes the pass started while the file was hashed
// when that was told the same. A defect of the file stops it with a
// *reader.ParseError, its file still set.
func (pl *planner) planPass(ctx context.Context, progress func(b, rows int64)) (planned, error) {
	var p planned
	var err error
	if a := pl.asked; a != nil {
		p.inputs, p.existing = a.in, a.existing
		pl.asked = nil
	} else if p.inputs, p.existing, err = pl.planInputs(ctx); err != nil {
		return p, err
	}
	p.file, p.plan, p.spill, err = pl.spec.result(p.inputs, progress)
	p.speculated = p.file != nil || err != nil
	if p.file == nil && err == nil { // no speculative plan to use: plan now
		if err := pl.fillSpool(ctx); err != nil {
			return p, err
		}
		p.file, p.plan, p.spill, err = pl.scan(ctx, p.inputs, nil, nil, progress, nil)
	}
	return p, err
}

// planFile runs the plan stage and stores the plan, or refuses the file.
// It returns what the stage made (its reject spill closed; nothing when the
// plan pass failed) and whether the file was refused.
func (kp *keeper) planFile(ctx context.Context) (planned, bool, error) {
	if err := kp.undoPlanDDL(ctx); err != nil {
		return planned{}, false, err
	}
	if err := kp.e.st.Driver.Limits().CheckTable(kp.target.Table); err != nil {
		return planned{}, true, kp.refuse(ctx, &Refusal{Error: err.Error()}, idemtype.Rows{})
	}
	ov, own := kp.startOverlap(ctx)
	kp.ov = ov
	defer own.stop()
	defer kp.ov.abort() // unless kept and committed
	p, err := kp.planPass(ctx, func(b, rows int64) {
		// What the pass has read runs ahead of the rows it has checked
		// (its reader's buffer can hold the file's last rows a partition
		// before its end): it has read the whole file only once it has
		// ended, which the report below says.
		if kp.id.Size > 0 {
			b = min(b, kp.id.Size-1)
		}
		kp.req.progress(Progress{Phase: "plan", Bytes: b, TotalBytes: kp.id.Size, Rows: rows})
	})
	defer p.spill.close()
	if err == nil {
		// The pass is done: say so even when it reported nothing (a
		// speculative pass that finished while the file was hashed, or a
		// columnar file whose footer and unread pages never count as
		// read), and before the overlap is settled, which may wait for
		// its writes (the tests that need partitions written before the
		// plan is known hold this report until they are).
		kp.req.progress(Progress{Phase: "plan", Bytes: kp.id.Size, TotalBytes: kp.id.Size, Rows: p.plan.Rows})
	}
	kp.ov.settle(p, err) // rolled back now, unless the plan keeps it
	if errors.Is(err, sink.ErrNoSchema) {
		return planned{}, false, kp.retract(ctx, &UsageError{Err: err})
	}
	if err != nil {
		refused, err := kp.refuseDefect(ctx, err)
		return planned{}, refused, err
	}
	kept := p
	kept.spill = nil
	refused, err := kp.keepPlan(ctx, p)
	return kept, refused, err
}

// keepPlan stores the plan p of the file, or refuses the file for it, and
// reports whether it was refused.
func (kp *keeper) keepPlan(ctx context.Context, p planned) (bool, error) {
	plan := p.plan
	if err := kp.in.check(kp.stat); err != nil {
		return false, err
	}
	if refused, err := kp.admit(ctx, p); refused || err != nil {
		return refused, err
	}
	ev, err := evolve(kp.req.Mapping.Evolve, kp.e.st.Driver.Limits(), kp.target, p.existing, plan.Schema.Arrow())
	if err != nil {
		return true, kp.refuseUnfit(ctx, plan, err)
	}
	if err := kp.storePlan(ctx, p, ev); err != nil {
		return false, fmt.Errorf("store plan: %w", err)
	}
	kp.log.Info("planned", "rows", plan.Rows, "rejected", plan.Rejected, "superseded", plan.Superseded, "partitions", len(plan.Partitions))
	return false, nil
}

// admit refuses the file of plan p, or retracts the operation when the
// command is wrong for the file, as the plan bars it (barred), and reports
// whether it was refused.
func (kp *keeper) admit(ctx context.Context, p planned) (bool, error) {
	why := kp.barred(p)
	var pr *planRefusal
	switch {
	case why == nil:
		return false, nil
	case errors.As(why, &pr):
		return true, kp.refuse(ctx, pr.ref, pr.counted)
	default:
		return false, kp.retract(ctx, why)
	}
}

// barred returns why the plan p alone bars the import from writing its
// file, or nil when nothing does: the mapping names a column the file
// lacks, or the file has a column of a name idemport keeps (a usage error:
// the command, not the file, is wrong); or a *planRefusal: the file's
// columns break a limit of the database, or it has more bad rows than
// --max-rejects allows. It is the one home of that decision: admit acts on
// it, plan and --dry-run report it (bars), and an overlap is kept only when it is nil (overlap.settle), so that
// what the overlap wrote can never commit for a file the import refuses.
func (pl *planner) barred(p planned) error {
	plan := p.plan
	if err := pl.checkColumns(columnNames(plan.Schema)); err != nil {
		return err
	}
	if err := pl.e.st.Driver.Limits().CheckColumns(pl.target, plan.Schema.Arrow()); err != nil {
		return &planRefusal{ref: &Refusal{Rows: plan.Rows, Error: err.Error()}}
	}
	if !pl.req.MaxRejects.Allows(plan.Rejected, plan.Rows) {
		rf := &Refusal{Rows: plan.Rows, Rejected: plan.Rejected, MaxRejects: pl.req.MaxRejects,
			Rejects: plan.Rejects[:min(len(plan.Rejects), maxReported)]}
		for _, b := range rf.Rejects {
			if b.Code == "type" && p.inputs.widens[b.Column] && !slices.Contains(rf.Widen, b.Column) {
				rf.Widen = append(rf.Widen, b.Column)
			}
		}
		return &planRefusal{ref: rf, counted: idemtype.Rows{Read: plan.Rows, Rejected: plan.Rejected}}
	}
	return nil
}

// planRefusal is a refusal the plan decides (keeper.barred): the report
// the ledger records, and what the attempt counted of the file's rows.
type planRefusal struct {
	ref     *Refusal
	counted idemtype.Rows
}

func (r *planRefusal) Error() string { return refusalText(r.ref) }

// refuseUnfit refuses the file of plan because its table, not the file, is
// wrong (unfit says how), without remembering a refusal, so that a rerun
// once the table is altered (or with --evolve) imports it. An operation
// that cannot be retracted (planned before, as by --reapply, or replacing
// an earlier version) records the refusal instead, as the table's
// (Refusal.Unfit), which a rerun plans again.
func (kp *keeper) refuseUnfit(ctx context.Context, plan *reader.Plan, unfit error) error {
	ref := &Refusal{Rows: plan.Rows, Rejected: plan.Rejected, MaxRejects: kp.req.MaxRejects, Error: unfit.Error(), Unfit: true}
	if kp.replacing() {
		return kp.refuse(ctx, ref, idemtype.Rows{})
	}
	if rerr := kp.retract(ctx, unfit); !errors.As(rerr, new(errRetracted)) {
		return kp.refuse(ctx, ref, idemtype.Rows{})
	}
	kp.res.Outcome = Refused
	return fmt.Errorf("refused: %w", unfit)
}

// storePlan stores plan p for the operation, with every bad row, and
// readies the tables its rows go through: the target (a new one is
// created, empty), the staging table of --atomic, the snapshot's.
func (kp *keeper) storePlan(ctx context.Context, p planned, ev *evolution) error {
	body, parts, err := kp.planRecord(p)
	if err != nil {
		return err
	}
	tables := kp.planTables(p, ev)
	ddl := kp.e.st.DDLCommits()
	if ddl {
		// Each DDL statement commits: the tables are made first, each
		// in a step of its own (planDDL), and the plan's transaction
		// writes rows alone.
		if err := kp.planDDL(ctx, tables.ensure, tables.schema, tables.staged); err != nil {
			return err
		}
	}
	store := func(tx *sql.Tx) error {
		// The plan commits without waiting for the log's flush where the
		// driver allows it (lazyCommitter), as partitions do: a file
		// admitted goes on to its partitions and the completion, or ends
		// its attempt, in transactions that follow it in the log, the last
		// of which waits; a refusal is recorded elsewhere, and waits.
		if l, ok := kp.e.st.Driver.(lazyCommitter); ok {
			if err := l.CommitLazily(ctx, tx); err != nil {
				return err
			}
		}
		if !ddl {
			if err := kp.readyTables(ctx, tx, tables); err != nil {
				return err
			}
		}
		return kp.savePlan(ctx, tx, p, body, parts)
	}
	if kp.ov.kept() {
		// The transaction that wrote the first partitions while the plan
		// pass ran stores the plan, with their done marks.
		return kp.ov.commit(ctx, store)
	}
	return withTx(ctx, kp.e.st.DB, store)
}

// planRecord returns what the checkpoints store of plan p: its body and
// its partitions.
func (kp *keeper) planRecord(p planned) ([]byte, []checkpoint.Partition, error) {
	plan := p.plan
	body, err := json.Marshal(storedPlan{Version: 1, Schema: plan.Schema, Rows: plan.Rows, Rejected: plan.Rejected, Superseded: plan.Superseded, Loose: plan.Loose,
		PartitionRows: kp.req.PartitionRows, GrowTo: kp.growTo, PartitionBytes: kp.req.PartitionBytes, Limits: p.inputs.limits, JSONB: p.inputs.jsonb})
	if err != nil {
		return nil, nil, err
	}
	parts := make([]checkpoint.Partition, len(plan.Partitions))
	for i, pt := range plan.Partitions {
		parts[i] = checkpoint.Partition{Partition: pt}
	}
	return body, parts, nil
}

// planTables says which tables the plan readies for the rows of a file,
// and with what columns.
type planTables struct {
	ensure bool          // the target is created (or checked) with the plan
	schema *arrow.Schema // the file's columns: the target's and the snapshot's
	staged *arrow.Schema // the columns an --atomic import stages
}

// planTables returns the tables the plan of p readies, the existing table
// to change as ev says.
func (kp *keeper) planTables(p planned, ev *evolution) planTables {
	schema := p.plan.Schema.Arrow()
	// An existing table that does not fit the file changes with the rows:
	// in the first partition's transaction (partitionWriter.prepare), with
	// --atomic in the completing one (evolveAtCompletion). A new one is
	// created with the plan, empty.
	t := planTables{ensure: p.existing == nil || (!kp.req.Mapping.Atomic && ev.text == ""), schema: schema, staged: schema}
	if p.existing != nil {
		// An --atomic import stages the values a decimal or text column
		// of the table (as it is to become) takes as the file wrote them
		// (valuesAs), so that the move at completion copies text, not a
		// float64's digits.
		t.staged = schemaAs(p.plan.Schema, valuesAs(kp.req.Mapping, kp.textFormat(), widened(kp.req.Mapping.Evolve, kp.e.st.Driver.Limits(), kp.target, p.existing, p.plan.Schema), p.plan.Schema)).Arrow()
	}
	return t
}

// readyTables readies in tx the tables t says, where DDL does not commit.
func (kp *keeper) readyTables(ctx context.Context, tx *sql.Tx, t planTables) error {
	if t.ensure {
		if err := kp.e.st.Driver.Ensure(ctx, tx, kp.target, t.schema); err != nil {
			return err
		}
	}
	if err := kp.ensureStage(ctx, tx, t.staged); err != nil {
		return err
	}
	return kp.ensureSnapshot(ctx, tx, t.schema)
}

// savePlan stores in tx plan p (its record body and parts), its bad rows,
// the removal of a replaced version's rows the plan does, and that the
// operation is planned.
func (kp *keeper) savePlan(ctx context.Context, tx *sql.Tx, p planned, body []byte, parts []checkpoint.Partition) error {
	if err := kp.prepareReplaced(ctx, tx, false); err != nil {
		return err
	}
	if err := kp.e.st.CP.Save(ctx, tx, kp.op, kp.attempt.ID, body, p.plan.Rows, parts); err != nil {
		return err
	}
	if err := kp.storeRejects(ctx, tx, p.spill); err != nil {
		return err
	}
	if err := kp.planCreated(ctx, tx); err != nil {
		return err
	}
	return kp.e.st.Ledger.Planned(ctx, tx, kp.id.Key, kp.attempt.ID)
}

// storeRejects stores every bad row of spill, with the plan: an admitted
// file has them all in the quarantine, or nothing is stored.
func (kp *keeper) storeRejects(ctx context.Context, tx *sql.Tx, spill *rejectSpill) error {
	var rejects []ledger.Reject
	return spill.each(func(rs []reader.Reject) error {
		rejects = rejects[:0]
		for _, b := range rs {
			b.Value, b.Row = shown(b.Value), storable(b.Row)
			rejects = append(rejects, ledger.Reject{Reject: b})
		}
		return kp.e.st.Ledger.AddRejects(ctx, tx, kp.id.Key, kp.attempt.ID, rejects)
	})
}

// refuseDefect refuses the file for a defect that stopped the plan pass, or
// returns err when it is not a defect of the file.
func (kp *keeper) refuseDefect(ctx context.Context, err error) (bool, error) {
	var pe *reader.ParseError
	if !errors.As(err, &pe) || ctx.Err() != nil || errors.Is(err, reader.ErrSourceChanged) {
		return false, err // a file that changed is abandoned, not refused
	}
	return true, kp.refuse(ctx, &Refusal{MaxRejects: kp.req.MaxRejects, Error: pe.Error()}, idemtype.Rows{})
}

// refuse records the refusal and ends the attempt: nothing reaches the
// target. counted is what the attempt counted of the file's rows (read and
// rejected, for a file refused for its bad rows), which the ledger and the
// result report.
func (kp *keeper) refuse(ctx context.Context, ref *Refusal, counted idemtype.Rows) error {
	kp.ov.abort()         // before anything is recorded: it may hold the write lock
	kp.res.Rows = counted // reported even when the refusal is not recorded
	if e := kp.req.Mapping.Encoding; e == "" || e == "utf-8" {
		n := 0
		for _, b := range ref.Rejects {
			if b.Code == reader.CodeUTF8 {
				n++
			}
		}
		ref.NotUTF8 = 2*n > len(ref.Rejects)
	}
	body, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	err = withTx(ctx, kp.e.st.DB, func(tx *sql.Tx) error {
		if err := kp.e.st.Ledger.Refuse(ctx, tx, kp.id.Key, kp.attempt.ID, string(body), counted); err != nil {
			return err
		}
		return kp.e.st.Ledger.End(ctx, tx, kp.attempt.ID, string(Refused), refusalText(ref), 0, int64(len(kp.ap.recovered)))
	})
	if err != nil {
		return fmt.Errorf("record refusal: %w", err)
	}
	kp.res.Outcome, kp.res.Refusal = Refused, ref
	kp.res.Err = fmt.Errorf("refused: %s", refusalText(ref))
	kp.log.Warn("refused", "rows", ref.Rows, "rejected", ref.Rejected, "error", refusalText(ref))
	return kp.res.Err
}

// retract removes the operation this run claimed when the command turned out
// to be wrong for the file before anything was planned: a usage error leaves
// no record, so the corrected command is not a conflict.
func (kp *keeper) retract(ctx context.Context, usage error) error {
	kp.ov.abort() // before anything is recorded: it may hold the write lock
	if kp.replacing() {
		// The earlier version is among past operations already: the
		// replacing operation stays, refused, and a rerun with a
		// corrected command supersedes it and finishes the replacement.
		return kp.refuse(ctx, &Refusal{Error: usage.Error()}, idemtype.Rows{})
	}
	dctx, cancel := store.Detached(ctx)
	defer cancel()
	err := withTx(dctx, kp.e.st.DB, func(tx *sql.Tx) error {
		return kp.e.st.Ledger.Retract(ctx, tx, kp.id.Key, kp.attempt.ID)
	})
	if err != nil {
		return errors.Join(usage, err)
	}
	kp.res.AttemptID = ""
	return errRetracted{usage}
}

// errRetracted carries a usage error past abandon, which must not record a
// failure for an operation that no longer exists.
type errRetracted struct{ error }

func (e errRetracted) Unwrap() error { return e.error }

// loadPlan reads the stored plan of a resumed operation, and opens the
// file to be read as it says. The rows a partition skips as superseded
// come with its claim (the checkpoint's partitions table), not from the
// plan read here: the plan's Superseded and its partitions' copies are read
// by nothing that writes rows.
func (pl *planner) loadPlan(ctx context.Context) (planned, error) {
	body, parts, err := pl.e.st.CP.Load(ctx, pl.e.st.DB, pl.op)
	if err != nil {
		return planned{}, err
	}
	if body == nil {
		return planned{}, fmt.Errorf("operation %s is planned but its plan is missing", pl.id.Key)
	}
	var sp storedPlan
	if err := json.Unmarshal(body, &sp); err != nil {
		return planned{}, fmt.Errorf("read stored plan: %w", err)
	}
	types := map[string]idemtype.Type{}
	for _, c := range sp.Schema {
		types[c.Name] = c.Type
	}
	p := planned{inputs: planInput{types: types, limits: sp.Limits, jsonb: sp.JSONB, rules: pl.e.st.Driver.Limits().Rules}}
	if p.file, err = pl.in.open(pl.readerOptions(p.inputs)); err != nil {
		return planned{}, fmt.Errorf("reopen %s: %w", pl.req.Path, err)
	}
	p.plan = &reader.Plan{Schema: sp.Schema, Rows: sp.Rows, Rejected: sp.Rejected, Superseded: sp.Superseded, Loose: sp.Loose}
	for _, pt := range parts {
		p.plan.Partitions = append(p.plan.Partitions, pt.Partition)
	}
	return p, nil
}

// storable returns s, or "" when no database can store it as text (it is
// not UTF-8, or holds a NUL byte): the reject's fields keep it exactly.
func storable(s string) string {
	if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
		return ""
	}
	return s
}

// shown returns s with what no database can store as text (bytes that are
// not UTF-8, NUL) replaced by U+FFFD: a reject's value is for people to
// read; its fields keep the bytes.
func shown(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}
