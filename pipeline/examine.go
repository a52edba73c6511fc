package pipeline

import (
	"context"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// Examination is a file identified as an import identifies it, and the
// decision an import's claim would make for it now, found without writing
// anything: what verify (package pipeline/ops) checks the target against.
// It holds the file open: Close releases it.
type Examination struct {
	// File is the file's path as results show it: a URL with its
	// credentials masked.
	File string
	// Target is the table, key and version column the file goes into,
	// defaults applied.
	Target sink.Target
	// ID is the file's identity: file ID, digests, the operation's key.
	ID ledger.Identity
	// Op is the ledger's operation of the file; nil when there is none.
	Op *ledger.Operation
	// Decision is what an import's claim would decide now (ledger.Decide);
	// meaningful only when Op is set.
	Decision ledger.Decision

	r *run
}

// Examine identifies the file of req on the target st (hashing it, never
// from the quick check) and decides, through the claim's own decision,
// what an import of it would do now. Rehash and Reapply of req are
// ignored: an examination asks whether the file is in place as it is. A
// stage error (the file missing, a bad mapping) is returned as the
// import's identify stage returns it.
func Examine(ctx context.Context, st *store.Store, req Request) (*Examination, error) {
	if err := st.Present(); err != nil {
		return nil, err
	}
	req.Rehash, req.Reapply = true, false
	r := newRun(&Engine{st: st}, req)
	r.defaults()
	x := &Examination{File: r.req.Path, Target: r.target, r: r}
	dd, err := r.examine(ctx)
	if err != nil {
		x.Close()
		return nil, err
	}
	x.ID = r.id
	if dd.op != nil {
		x.Op, x.Decision = dd.op, dd.decision
	}
	return x, nil
}

// examine is what plan, --dry-run and verify share of an import: its
// identify stage, hashing alone (no plan pass), and the decision its claim
// would make now (for a target without a database, that of a file never
// imported), found without writing anything.
func (r *run) examine(ctx context.Context) (decided, error) {
	ident, _, err := r.identifier().identify(ctx)
	if err != nil {
		return decided{}, err
	}
	r.identified(ident)
	if !r.e.st.Exists() {
		return decided{decision: ledger.Create}, nil
	}
	op, now, err := r.e.st.Ledger.Get(ctx, r.e.st.DB, r.id.Key)
	if err != nil {
		return decided{}, err
	}
	return r.claimer().decide(ctx, r.e.st.DB, op, now)
}

// Holding says which live import holds the file's operation, for the
// decision ledger.Busy (BusyError.Holding).
func (x *Examination) Holding(ctx context.Context) string {
	return x.r.claimer().heldBy(ctx, x.Op).Holding()
}

// Read opens the file as its import read it and plans it as the import's
// plan pass did: with the table's column types (text formats) and the
// forced ones, so that a value is the one that was stored, not what
// inference makes of it alone; and with its superseded rows skipped, so
// that each key's row is the one the import applied. table is the table
// the rows went into; when that does not exist, all three are nil.
func (x *Examination) Read(ctx context.Context) (f *reader.File, plan *reader.Plan, table *sink.Table, err error) {
	r := x.r.planner()
	in, table, err := r.planInputs(ctx)
	if err != nil || table == nil {
		return nil, nil, nil, err
	}
	tmp, err := r.req.keySpillDir()
	if err != nil {
		return nil, nil, nil, err
	}
	if f, err = r.in.open(r.readerOptions(in)); err != nil {
		return nil, nil, nil, err
	}
	plan, err = f.Scan(ctx, reader.ScanOptions{PartitionRows: r.req.PartitionRows, GrowTo: r.growTo, PartitionBytes: r.req.PartitionBytes, TempDir: tmp, KeysHeld: r.req.KeysHeld})
	if err != nil {
		return nil, nil, nil, err
	}
	return f, plan, table, nil
}

// Close releases the file: its source, and a stream's private copy.
func (x *Examination) Close() {
	x.r.in.close(x.r.e.st.Log)
}
