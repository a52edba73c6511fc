package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/ledger"
)

// fx is a real target (a SQLite file, or a PostgreSQL schema of its own)
// with an engine open on it, as the command opens one, and a directory for
// the test's files. The tests of this package drive the pipeline through
// its entry points (Open, Import, PlanFile, Verify) on it.
type fx struct {
	tg    *testkit.Target
	dir   string
	dsn   string
	state string // PostgreSQL state schema; empty on SQLite
	e     *Engine
	// claimed records the decision of each import's claim through e, from
	// its "claimed" log record.
	claimed *decisions
	// holder is a holder a row's setup left for its import to let go.
	holder *holder
}

func newFx(t *testing.T, name string) *fx {
	t.Helper()
	dir := t.TempDir()
	f := &fx{tg: testkit.NewTarget(t, name, dir), dir: dir, claimed: &decisions{}}
	f.dsn = f.tg.Args[1]
	if f.tg.IsPostgres() {
		f.state = f.tg.Schema
	}
	f.e = f.open(t, Options{Logger: slog.New(f.claimed)})
	return f
}

// open opens another engine on the target, closed when t ends.
func (f *fx) open(t *testing.T, o Options) *Engine {
	t.Helper()
	o.StateSchema = f.state
	e, err := Open(context.Background(), f.dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	// The tests compare the catalog and read the ledger through a pool of
	// their own: they start once the state's tables exist, as Open left
	// them before it left a fresh state's migrations running.
	e.DB()
	return e
}

// failing opens an engine whose run fails (a clean error) at the failpoint
// spec, as IDEMPORT_FAILPOINT=spec makes the command's.
func (f *fx) failing(t *testing.T, spec string) *Engine {
	t.Helper()
	fp, err := failpoint.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return f.open(t, Options{Failpoints: fp})
}

// undo retracts the operation res imported by place, as ops.Operator.Undo
// does for the states that follow it: in one transaction its partitions
// and its rows go and it becomes undone. (ops imports this package, so
// these tests cannot call Undo; the tests of ops and of the command prove
// Undo itself.)
func (f *fx) undo(t *testing.T, res *Result) {
	t.Helper()
	ctx := context.Background()
	st := f.e.st
	k := ledger.Key{Table: res.Table, FileID: res.FileID}
	tx, err := st.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := st.Ledger.Lock(ctx, tx, k); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CP.Drop(ctx, tx, checkpoint.Op{Table: k.Table, FileID: k.FileID}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Driver.DeleteFile(ctx, tx, k.Table, FileKey(k.FileID)); err != nil {
		t.Fatal(err)
	}
	if err := st.Ledger.Close(ctx, tx, k, ledger.Undone); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// write writes content to the file name in the test's directory and
// returns its path.
func (f *fx) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rows returns every row of q as text.
func (f *fx) rows(t *testing.T, q string, args ...any) [][]any {
	t.Helper()
	return testkit.Query(t, f.tg.DB, f.tg.Rebind(q), args...)
}

func (f *fx) exec(t *testing.T, q string) {
	t.Helper()
	if _, err := f.tg.DB.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// decisions is a log handler that records the decision of each claim
// ("claimed" records) made through the engine it logs for.
type decisions struct {
	mu   sync.Mutex
	seen []string
}

func (d *decisions) Enabled(context.Context, slog.Level) bool { return true }
func (d *decisions) WithAttrs([]slog.Attr) slog.Handler       { return d }
func (d *decisions) WithGroup(string) slog.Handler            { return d }
func (d *decisions) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "claimed" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "decision" {
			d.mu.Lock()
			d.seen = append(d.seen, a.Value.String())
			d.mu.Unlock()
		}
		return true
	})
	return nil
}

// take returns the decisions recorded since the last take.
func (d *decisions) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.seen
	d.seen = nil
	return s
}

// holder is an import stopped at a boundary while it holds a lease, in
// this process: live (its heartbeat runs), on this host.
type holder struct {
	release func()
	done    chan struct{} // closed when the import ends
	res     *Result
}

// finish lets the holder go on and returns its result.
func (h *holder) finish() *Result {
	h.release()
	<-h.done
	return h.res
}

// holdPlanning starts an import of req that stops once its claim has
// committed, holding the operation's planning lease (the claim's log
// record blocks until release).
func (f *fx) holdPlanning(t *testing.T, req Request) *holder {
	t.Helper()
	gate := &gateHandler{at: "claimed", reached: make(chan struct{}), release: make(chan struct{})}
	e := f.open(t, Options{Logger: slog.New(gate)})
	return f.hold(t, e, req, gate.reached, gate.release)
}

// holdPartition starts an import of req that stops after committing its
// first partition, holding the lease of the next one (claimed in the same
// transaction) until release.
func (f *fx) holdPartition(t *testing.T, req Request) *holder {
	t.Helper()
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	req.Progress = func(p Progress) {
		if p.Phase == "apply" && p.Partitions == 1 {
			once.Do(func() {
				close(reached)
				<-release
			})
		}
	}
	return f.hold(t, f.open(t, Options{}), req, reached, release)
}

func (f *fx) hold(t *testing.T, e *Engine, req Request, reached, release chan struct{}) *holder {
	t.Helper()
	h := &holder{done: make(chan struct{})}
	var once sync.Once
	h.release = func() { once.Do(func() { close(release) }) }
	go func() {
		defer close(h.done)
		h.res = e.Import(context.Background(), req)
	}()
	// Registered after the engine's: runs first, so the import ends before
	// its engine closes.
	t.Cleanup(func() { h.finish() })
	select {
	case <-reached:
	case <-h.done:
		t.Fatalf("the holder ended before it held its lease: %s %v", h.res.Outcome, h.res.Err)
	case <-time.After(time.Minute):
		t.Fatal("the holder did not reach its boundary")
	}
	return h
}

// gateHandler blocks the log record with message at until release.
type gateHandler struct {
	at       string
	reached  chan struct{}
	release  chan struct{}
	blocking sync.Once
}

func (g *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (g *gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g *gateHandler) WithGroup(string) slog.Handler            { return g }
func (g *gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == g.at {
		g.blocking.Do(func() {
			close(g.reached)
			<-g.release
		})
	}
	return nil
}

// helperEnv names the environment variable that makes the test binary an
// import process (see TestMain): the JSON of a helperJob.
const helperEnv = "IDEMPORT_PIPELINE_TEST_IMPORT"

// helperJob is an import run by another process: the test binary itself,
// which runs it and exits (or is killed, or stops, at its failpoint).
type helperJob struct {
	DSN, StateSchema, Path, FileID, Failpoint string
	PartitionRows, PartitionBytes             int64
	Lease                                     time.Duration
	Workers                                   int
}

func TestMain(m *testing.M) {
	if job := os.Getenv(helperEnv); job != "" {
		os.Exit(runHelper(job))
	}
	testkit.RaiseParallel()
	os.Exit(m.Run())
}

func runHelper(spec string) int {
	var j helperJob
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fp, err := failpoint.Parse(j.Failpoint)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	e, err := Open(ctx, j.DSN, Options{StateSchema: j.StateSchema, Failpoints: fp})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Close()
	res := e.Import(ctx, Request{Path: j.Path, FileID: j.FileID, PartitionRows: j.PartitionRows, PartitionBytes: j.PartitionBytes, Lease: j.Lease, Workers: j.Workers})
	fmt.Println(res.Outcome, res.Err)
	if res.Err != nil {
		return 1
	}
	return 0
}

// process starts an import of job in another process. The process is
// killed, if still there, when t ends.
func (f *fx) process(t *testing.T, job helperJob) *exec.Cmd {
	t.Helper()
	job.DSN, job.StateSchema = f.dsn, f.state
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// killedHolding runs an import of job in another process that kills itself
// at job's failpoint, and waits for it (the process is reaped: gone).
func (f *fx) killedHolding(t *testing.T, job helperJob) {
	t.Helper()
	cmd := f.process(t, job)
	err := cmd.Wait()
	if cmd.ProcessState.Success() || !strings.Contains(fmt.Sprint(err), "kill") && cmd.ProcessState.ExitCode() != failpoint.KilledExitCode {
		t.Fatalf("the import was not killed at %s: %v %s", job.Failpoint, err, cmd.Stdout)
	}
}

// operation names the target's only operation.
func (f *fx) operation(t *testing.T) checkpoint.Op {
	t.Helper()
	ops := f.rows(t, `SELECT table_name, file_id FROM `+f.tg.Ledger("operations"))
	if len(ops) != 1 {
		t.Fatalf("operations: %v", ops)
	}
	return checkpoint.Op{Table: ops[0][0].(string), FileID: ops[0][1].(string)}
}

// writeParquet writes a Parquet file of the columns id (int64) and price
// (float64) to name in the test's directory and returns its path.
func (f *fx) writeParquet(t *testing.T, name string, ids []int64, prices []float64) string {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "price", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.Float64Builder).AppendValues(prices, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	path := filepath.Join(f.dir, name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := pqarrow.WriteTable(tbl, out, 1024, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return path
}
