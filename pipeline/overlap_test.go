package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// The overlap (overlap.go) writes a new file's first partitions while its
// plan pass runs. Whether it has written a partition before the pass ends
// is a race the pass of a file of a few MiB may win; the tests here take
// the race away (passHold), so that the partitions they need written are
// written before the plan is known, on every run.
const (
	overlapKeptLog    = "partitions written while the plan pass ran committed with the plan"
	overlapDroppedLog = "the plan keeps nothing written while the plan pass ran"
	overlapRolledLog  = "the partitions written while the plan pass ran were rolled back"
)

// passHold holds an import's plan stage at the end of its plan pass until
// the overlap has written n partitions. The plan stage reports the plan
// phase done (bytes = total) before it settles the overlap
// (keeper.planFile); its Progress callback (progress) waits there for the
// n-th pass of failpoint inside-overlap (Hit), which the overlap passes
// after each partition it writes. The overlap, which learns the plan only
// once it is settled, meanwhile writes the partitions the pass finished:
// so those n were written before the plan was known, however fast the
// pass was.
type passHold struct {
	n       int64
	wait    time.Duration // the longest it holds the plan stage
	grace   time.Duration // when set, the longest it waits for the n-th partition once n-1 are written
	written atomic.Int64  // partitions the overlap wrote
	atHold  atomic.Int64  // of those, written when the hold let the plan stage go on
	near    chan struct{} // closed at the (n-1)-th
	reached chan struct{} // closed at the n-th
	once    sync.Once
}

func newPassHold(n int) *passHold {
	h := &passHold{n: int64(n), wait: 30 * time.Second, near: make(chan struct{}), reached: make(chan struct{})}
	if n <= 1 {
		close(h.near)
	}
	return h
}

// Hit counts the partitions the overlap writes.
func (h *passHold) Hit(name string) error {
	if name == "inside-overlap" {
		switch h.written.Add(1) {
		case h.n - 1:
			close(h.near)
		case h.n:
			close(h.reached)
		}
	}
	return nil
}

// progress holds the first report of the plan phase done until the
// overlap wrote n partitions, or its wait passed (half a minute unless
// set: the overlap gave up, and the test then fails on atHold). With a
// grace, the n-th is one the overlap must not write: the hold waits for
// the n-1 before it as long as for any, and then the grace for the n-th,
// so that how fast a loaded machine writes the ones before decides
// nothing.
func (h *passHold) progress(p Progress) {
	if p.Phase == "plan" && p.TotalBytes > 0 && p.Bytes >= p.TotalBytes {
		h.once.Do(func() {
			wait := time.After(h.wait)
			if h.grace > 0 {
				select {
				case <-h.near:
				case <-wait:
				}
				wait = time.After(h.grace)
			}
			select {
			case <-h.reached:
			case <-wait:
			}
			h.atHold.Store(h.written.Load())
		})
	}
}

// meetAtPlanEnd returns a Progress that reports to h.progress and, at
// the plan phase's end, closes held and waits for release or limit: the
// test meets the held import there.
func (h *passHold) meetAtPlanEnd(held, release chan struct{}, limit time.Duration) func(Progress) {
	return func(p Progress) {
		if p.Phase == "plan" && p.TotalBytes > 0 && p.Bytes >= p.TotalBytes {
			h.progress(p)
			close(held)
			select {
			case <-release:
			case <-time.After(limit):
			}
		}
	}
}

// logRecorder is a log handler that keeps every record: its message, and
// its message with its attributes for a failure to show.
type logRecorder struct {
	mu    sync.Mutex
	msgs  []string
	lines []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

// String returns every record kept, one a line.
func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// has reports whether a record with message msg was logged.
func (l *logRecorder) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.msgs, msg)
}

// openHeld opens an engine on f's target whose imports pass hold's
// failpoints and log to a recorder, which it returns. Its overlaps wait
// an hour for the plan (Engine.overlapWait), not the most overlapTime
// allows (10 s from the overlap's start): that bound would cover the
// pass, the partitions written before the hold and the hold itself,
// which on a loaded machine took longer, and the overlap rolled back.
// The tests that hold the pass check what the overlap does with the
// plan, not the bound; the hold's own wait bounds theirs.
func (f *fx) openHeld(t *testing.T, hold *passHold) (*Engine, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	e := f.open(t, Options{Failpoints: hold, Logger: slog.New(rec), BusyTimeout: time.Minute})
	e.overlapWait = time.Hour
	return e, rec
}

// catalog lists every table, index and sequence of f's target, from its
// catalog, sorted.
func (f *fx) catalog(t *testing.T) []string {
	t.Helper()
	var rows [][]any
	if f.tg.IsPostgres() {
		rows = f.rows(t, `SELECT relkind::text || ' ' || relname FROM pg_class WHERE relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?)`, f.tg.Schema)
	} else {
		rows = f.rows(t, `SELECT type || ' ' || name FROM sqlite_master`)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r[0].(string))
	}
	sort.Strings(out)
	return out
}

// lateBadFile returns a CSV file of id, qty and name over 8 MiB whose
// rows are good but for those at the ordinals bad (a name that is not
// UTF-8) and its last row, and its row count.
func lateBadFile(bad ...int) (string, int64) {
	var b strings.Builder
	b.WriteString("id,qty,name\n")
	n := int64(0)
	row := func(name string) {
		n++
		fmt.Fprintf(&b, "%d,%d,%s\n", n, n%100, name)
	}
	for b.Len() < overlapBytes+1<<20 {
		if slices.Contains(bad, int(n+1)) {
			row("\xff\xfe")
		} else {
			row(fmt.Sprintf("name %d", n+1))
		}
	}
	row("\xff\xfe")
	return b.String(), n
}

// TestOverlapOfARefusedFile imports files the plan refuses only at the
// end of its pass, for bad rows over --max-rejects (the last row, in
// ordinal mode and by key; one early and the last with one allowed),
// their first partitions written by the overlap before (passHold). Each
// is refused and leaves no trace: no table, no staging table or index
// (the catalog is as before), no plan, no partition, the ledger's
// operation refused; and the overlap was dropped by settle itself, as the
// plan bars the file (the log says so), not only rolled back when the
// refusal aborts it: settle and admit decide by one function
// (keeper.barred), and settle keeping a refused file's partitions is one
// step from committing them. A file a limit of the database refuses is
// not among them: the overlap cannot write one (on SQLite a name it folds
// is a duplicate column, and too many columns fail the CREATE TABLE; on
// PostgreSQL, which cuts a long name short, the table made does not fit
// the file), so it rolls back on its own.
func TestOverlapOfARefusedFile(t *testing.T) {
	t.Parallel()
	late, lateRows := lateBadFile()
	early, earlyRows := lateBadFile(2500)
	cases := []struct {
		name     string
		file     string
		key      []string
		max      RejectLimit
		rows     int64
		rejected int64
		reason   string
	}{
		{name: "bad-rows/ordinal", file: late, rows: lateRows, rejected: 1,
			reason: fmt.Sprintf(`1 of %d rows is bad (at most 0 allowed); row %d column "name"`, lateRows, lateRows)},
		{name: "bad-rows/key", file: late, key: []string{"id"}, rows: lateRows, rejected: 1,
			reason: fmt.Sprintf(`1 of %d rows is bad (at most 0 allowed); row %d column "name"`, lateRows, lateRows)},
		{name: "over-max-rejects", file: early, max: RejectLimit{Count: 1}, rows: earlyRows, rejected: 2,
			reason: fmt.Sprintf(`2 of %d rows are bad (at most 1 allowed); row 2500 column "name"`, earlyRows)},
	}
	testkit.Each(t, func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				path := f.write(t, "data.csv", c.file)
				before := f.catalog(t)
				hold := newPassHold(1)
				e, log := f.openHeld(t, hold)
				req := Request{Path: path, Mapping: Mapping{Table: "t", Key: c.key}, PartitionRows: 2000, MaxRejects: c.max,
					Lease: time.Minute, Progress: hold.progress}
				res := e.Import(context.Background(), req)
				if res.Outcome != Refused || res.Refusal == nil || !strings.Contains(refusalText(res.Refusal), c.reason) {
					t.Fatalf("%s %+v (%v), want refused: %s", res.Outcome, res.Refusal, res.Err, c.reason)
				}
				if res.Refusal.Rows != c.rows || res.Refusal.Rejected != c.rejected {
					t.Fatalf("refusal counts %d rows, %d bad; want %d, %d", res.Refusal.Rows, res.Refusal.Rejected, c.rows, c.rejected)
				}
				if n := hold.atHold.Load(); n < 1 {
					t.Fatalf("the overlap wrote no partition before the plan was known: this test proves nothing\n%s", log)
				}
				checkNoTrace(t, f, before)
				if !log.has(overlapDroppedLog) || !log.has(overlapRolledLog) || log.has(overlapKeptLog) {
					t.Fatalf("the overlap was not dropped as the plan bars the file (settle and admit disagree):\n%s", log)
				}

				// Refused again from the stored report, still without a trace.
				again := e.Import(context.Background(), req)
				if again.Outcome != Refused {
					t.Fatalf("rerun: %s (%v), want refused", again.Outcome, again.Err)
				}
				checkNoTrace(t, f, before)
			})
		}
	})
}

// checkNoTrace fails t unless f's target holds what before lists of its
// catalog, and of the refused file one operation, refused, without a plan,
// a partition, a reject or a live lease.
func checkNoTrace(t *testing.T, f *fx, before []string) {
	t.Helper()
	if now := f.catalog(t); !slices.Equal(now, before) {
		t.Fatalf("the refused file changed the catalog:\n was: %q\n now: %q", before, now)
	}
	if f.tg.TableExists(t, "t") {
		t.Fatal("the refused file's table exists")
	}
	ops := f.rows(t, `SELECT state, rows_inserted FROM `+f.tg.Ledger("operations"))
	if fmt.Sprint(ops) != "[[refused 0]]" {
		t.Fatalf("operations %v, want one refused with no row inserted", ops)
	}
	for _, table := range []string{"plans", "partitions", "rejects"} {
		if n := f.count(t, `SELECT count(*) FROM `+f.tg.Ledger(table)); n != 0 {
			t.Fatalf("%d rows in %s", n, table)
		}
	}
	if n := f.tg.LiveLeases(t); n != 0 {
		t.Fatalf("%d live leases", n)
	}
}

// supersededRow is a row of a keyed file: its key and value.
type supersededRow struct {
	id int
	v  string
}

// TestOverlapNeverCommitsSupersededRows imports by key files over 8 MiB
// whose keys repeat, the later row of a key superseding the earlier
// (Partition.Superseded), with the overlap holding the repeats written
// before the plan is known (passHold): a key of partition 0 repeated in
// partition 3, two keys repeated inside partition 1 (one with the same
// value, so that writing both would count it unchanged), a key of
// partition 2 repeated with the same value in partition 5, and keys
// repeated inside the last partition alone, which the overlap never
// writes. A partition with a superseded row stops the overlap
// (overlap.limit): a written one rolls it all back, and the apply writes
// each partition without its superseded rows. The whole table is compared
// value by value as text with the last row of each key (its lineage
// included: the row that last wrote it), and the counts with the plan's:
// each key inserted once, every earlier row superseded, none updated or
// unchanged; a rerun is a duplicate and changes nothing.
func TestOverlapNeverCommitsSupersededRows(t *testing.T) {
	t.Parallel()
	const partRows = 2000
	type repeat struct{ from, to int } // the row at ordinal to takes the key of the row at from; same: its value too
	cases := []struct {
		name    string
		repeats []repeat
		same    bool // the repeating rows have their key's earlier value
		hold    int  // partitions the overlap writes before the plan is known
		kept    bool // the overlap commits with the plan
	}{
		{name: "across", repeats: []repeat{{10, 3*partRows + 7}}, hold: 4},
		{name: "inside", repeats: []repeat{{partRows + 1, partRows + 500}, {partRows + 2, 2 * partRows}}, hold: 2},
		{name: "inside-same", repeats: []repeat{{partRows + 1, partRows + 500}}, same: true, hold: 2},
		{name: "later-same", repeats: []repeat{{2*partRows + 3, 5*partRows + 3}}, same: true, hold: 6},
		{name: "last", hold: 3, kept: true}, // repeats set below, in the last partition
	}
	testkit.Each(t, func(t *testing.T, name string) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				// Over 8 MiB, and half a partition in the last: the pass
				// never cuts it before its end, and the overlap never writes it.
				var rows []supersededRow
				size := len("id,v\n")
				for size < overlapBytes+1<<20 || len(rows)%partRows != partRows/2 {
					o := len(rows) + 1
					r := supersededRow{id: o, v: fmt.Sprintf("value of row %d %s", o, strings.Repeat("x", 20))}
					rows = append(rows, r)
					size += len(fmt.Sprintf("%d,%s\n", r.id, r.v))
				}
				repeats := c.repeats
				if c.name == "last" {
					n := len(rows)
					last := n - partRows/2 // the ordinal before the last partition's first
					repeats = []repeat{{last + 1, n}, {last + 2, n - 1}}
				}
				for _, r := range repeats {
					rows[r.to-1].id = rows[r.from-1].id
					if c.same {
						rows[r.to-1].v = rows[r.from-1].v
					}
				}
				var b strings.Builder
				b.WriteString("id,v\n")
				want := map[int][]string{} // by key: the last row's id, v, ordinal
				for i, r := range rows {
					fmt.Fprintf(&b, "%d,%s\n", r.id, r.v)
					want[r.id] = []string{fmt.Sprint(r.id), r.v, fmt.Sprint(i + 1)}
				}
				path := f.write(t, "data.csv", b.String())
				hold := newPassHold(c.hold)
				e, log := f.openHeld(t, hold)
				req := Request{Path: path, Mapping: Mapping{Table: "t", Key: []string{"id"}}, PartitionRows: partRows,
					Lease: time.Minute, Progress: hold.progress}
				res := e.Import(context.Background(), req)
				if res.Err != nil || res.Outcome != Imported {
					t.Fatalf("%s: %v", res.Outcome, res.Err)
				}
				if n := hold.atHold.Load(); n < int64(c.hold) {
					t.Fatalf("the overlap wrote %d partitions before the plan was known, want %d: this test proves less than it says\n%s", n, c.hold, log)
				}
				n, keys := int64(len(rows)), int64(len(want))
				if got := res.Rows; got.Read != n || got.Inserted != keys || got.Superseded != n-keys || got.Updated != 0 || got.Unchanged != 0 || got.Rejected != 0 {
					t.Fatalf("rows %+v, want %d read, %d inserted, %d superseded", got, n, keys, n-keys)
				}
				if res.Partitions.Committed != res.Partitions.Total || res.Partitions.Skipped != 0 {
					t.Fatalf("partitions %+v, want every one committed by this run", res.Partitions)
				}
				// The whole table as text, each row's fields joined, sorted.
				var wantRows []string
				for _, r := range want {
					wantRows = append(wantRows, strings.Join(r, ","))
				}
				sort.Strings(wantRows)
				var gotRows []string
				for _, r := range f.rows(t, fmt.Sprintf(`SELECT %s, %s, %s FROM t`, f.tg.Text("id"), f.tg.Text("v"), f.tg.Text("_idemport_row"))) {
					gotRows = append(gotRows, fmt.Sprintf("%v,%v,%v", r...))
				}
				sort.Strings(gotRows)
				if len(gotRows) != len(wantRows) {
					t.Fatalf("t holds %d rows, want %d", len(gotRows), len(wantRows))
				}
				for i := range gotRows {
					if gotRows[i] != wantRows[i] {
						t.Fatalf("t holds the row %q where the last rows of the keys have %q", gotRows[i], wantRows[i])
					}
				}
				op := f.rows(t, `SELECT state, rows_inserted FROM `+f.tg.Ledger("operations"))
				if fmt.Sprint(op) != fmt.Sprint([][]any{{"completed", keys}}) {
					t.Fatalf("operations %v, want completed with %d rows inserted", op, keys)
				}
				if log.has(overlapKeptLog) != c.kept {
					t.Fatalf("the overlap was kept: %v, want %v\n%s", log.has(overlapKeptLog), c.kept, log)
				}

				snap := f.tg.Snapshot(t, "quickcheck")
				again := e.Import(context.Background(), req)
				if again.Outcome != Duplicate || again.Rows != (Result{}).Rows {
					t.Fatalf("rerun: %s %+v (%v), want a duplicate that writes nothing", again.Outcome, again.Rows, again.Err)
				}
				if d := snap.Diff(f.tg.Snapshot(t, "quickcheck")); d != "" {
					t.Fatalf("the rerun changed %s", d)
				}
			})
		}
	})
}

// TestOverlapWritesAFullLastPartition imports a file over 8 MiB of two
// full partitions, in ordinal mode and by key, holding the plan stage's
// report that the pass is done until the overlap has written both
// (passHold): the pass cuts a last partition that is full before it ends
// (reader.ScanOptions.Partitioned), and the plan keeps it as any other,
// both committed with the plan, never rolled back for being the last.
// The pass's own reports never say the whole file is read before the pass
// has ended: its reader reads ahead (the last rows of this file are in its
// buffer by the 196,608th row), and a report of every byte read then
// would be held as the end of the pass, holding the pass itself, so that
// the overlap waits for the last partition until it gives up
// (overlapTime). The table holds the file, value by value as text.
func TestOverlapWritesAFullLastPartition(t *testing.T) {
	t.Parallel()
	const partRows, rows = 100000, 200000
	content := numberedFile(rows, strings.Repeat("x", 40))
	testkit.Each(t, func(t *testing.T, name string) {
		for _, mode := range []string{"ordinal", "key"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				f := newFx(t, name)
				path := f.write(t, "data.csv", content)
				hold := newPassHold(2)
				e, log := f.openHeld(t, hold)
				var (
					mu    sync.Mutex
					whole []Progress // plan reports of the whole file read
				)
				req := Request{Path: path, Mapping: Mapping{Table: "t"}, PartitionRows: partRows, Lease: time.Minute, Progress: func(p Progress) {
					if p.Phase == "plan" && p.Bytes >= p.TotalBytes {
						mu.Lock()
						whole = append(whole, p)
						mu.Unlock()
					}
					hold.progress(p)
				}}
				if mode == "key" {
					req.Mapping.Key = []string{"id"}
				}
				res := e.Import(context.Background(), req)
				if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != rows || res.Partitions.Committed != 2 {
					t.Fatalf("%s (%v): rows %+v, partitions %+v; want imported, %d rows in 2 partitions", res.Outcome, res.Err, res.Rows, res.Partitions, rows)
				}
				if len(whole) != 1 || whole[0].Rows != rows {
					t.Errorf("the plan phase reported the whole file read %d times (%+v), want once, at the end of its pass", len(whole), whole)
				}
				if n := hold.atHold.Load(); n != 2 || !log.has(overlapKeptLog) || log.has(overlapRolledLog) {
					t.Fatalf("the overlap wrote %d partitions before the plan was known, want both, kept with the plan:\n%s", n, log)
				}
				done := f.rows(t, `SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE done = 1 AND done_by = ?`, res.AttemptID)
				if fmt.Sprint(done) != "[[2]]" {
					t.Fatalf("partitions done by the import: %v, want 2", done)
				}
				f.wantNumbered(t, rows, strings.Repeat("x", 40))
			})
		}
	})
}

// TestOverlapWritesOnWhereTheDatabaseLets imports a keyed file of some
// 37 MiB in twelve partitions whose plan pass ends before the plan stage
// goes on (passHold). On PostgreSQL, which bounds no held transaction,
// the overlap writes past overlapWrite, since the pass will end (has
// ended) within its time: all twelve partitions before the plan is
// known. On SQLite it stops at the partition that brings it to 24 MiB
// (sink.Limits.HeldBytes) and writes no other while the plan stage is
// held (two seconds once it wrote that one: passHold.grace), nor after. Either way the table is the file, value
// by value, and every partition is done by the import. The overlap may
// wait an hour for the plan (openHeld): what it writes then
// hangs on the pass and the database's bound, not on how fast a loaded
// machine writes 37 MiB within overlapTime's ten seconds.
func TestOverlapWritesOnWhereTheDatabaseLets(t *testing.T) {
	t.Parallel()
	const partRows, parts = 40000, 12
	var (
		b     strings.Builder
		bytes []int64 // of each partition's rows
	)
	b.WriteString("id,v\n")
	pad := strings.Repeat("y", 60)
	for i := 1; i <= partRows*parts; i++ {
		start := b.Len()
		b.WriteString(numberedLine(i, pad))
		if (i-1)%partRows == 0 {
			bytes = append(bytes, 0)
		}
		bytes[len(bytes)-1] += int64(b.Len() - start)
	}
	content := b.String()
	floor, sum := 0, int64(0) // the partitions that hold 24 MiB
	for sum < 24<<20 {
		sum += bytes[floor]
		floor++
	}
	if floor >= parts-1 {
		t.Fatalf("the first %d partitions hold 24 MiB: the file is too small to tell", floor)
	}
	testkit.Each(t, func(t *testing.T, name string) {
		t.Parallel()
		f := newFx(t, name)
		if f.tg.IsMariaDB() {
			t.Skip("no overlap where DDL commits")
		}
		path := f.write(t, "data.csv", content)
		want := parts
		hold := newPassHold(parts)
		if !f.tg.IsPostgres() {
			want = floor
			hold = newPassHold(floor + 1)
			hold.grace = 2 * time.Second
		}
		e, log := f.openHeld(t, hold)
		res := e.Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: "t", Key: []string{"id"}},
			PartitionRows: partRows, Lease: time.Minute, Progress: hold.progress})
		if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != partRows*parts || res.Partitions.Committed != parts {
			t.Fatalf("%s (%v): rows %+v, partitions %+v; want imported, %d rows in %d partitions", res.Outcome, res.Err, res.Rows, res.Partitions, partRows*parts, parts)
		}
		if n, all := hold.atHold.Load(), hold.written.Load(); n != int64(want) || all != int64(want) || !log.has(overlapKeptLog) {
			t.Fatalf("the overlap wrote %d partitions before the plan was known and %d in all, want %d (24 MiB end with partition %d), kept:\n%s", n, all, want, floor, log)
		}
		done := f.rows(t, `SELECT count(*) FROM `+f.tg.Ledger("partitions")+` WHERE done = 1 AND done_by = ?`, res.AttemptID)
		if fmt.Sprint(done) != fmt.Sprintf("[[%d]]", parts) {
			t.Fatalf("partitions done by the import: %v, want %d", done, parts)
		}
		f.wantNumbered(t, partRows*parts, pad)
	})
}

// numberedLine is row i of a numbered file: "i,value of row i pad".
func numberedLine(i int, pad string) string {
	return fmt.Sprintf("%d,value of row %d %s\n", i, i, pad)
}

// numberedFile is a CSV file with the header "id,v" and numbered rows 1
// to rows (numberedLine).
func numberedFile(rows int, pad string) string {
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 1; i <= rows; i++ {
		b.WriteString(numberedLine(i, pad))
	}
	return b.String()
}

// wantNumbered fails t unless table t holds numberedFile(rows, pad),
// value by value as text.
func (f *fx) wantNumbered(t *testing.T, rows int, pad string) {
	t.Helper()
	got := f.rows(t, `SELECT `+f.tg.Text("t.id")+`, v FROM t ORDER BY t.id`)
	if len(got) != rows {
		t.Fatalf("t holds %d rows, want %d", len(got), rows)
	}
	for i, r := range got {
		if want := []any{fmt.Sprint(i + 1), fmt.Sprintf("value of row %d %s", i+1, pad)}; fmt.Sprint(r) != fmt.Sprint(want) {
			t.Fatalf("row %d: %v, want %v", i+1, r, want)
		}
	}
}

// TestOverlapCheckpointEndsWithTheImport imports into SQLite a file of
// three partitions whose first two the overlap writes before the plan is
// known (passHold). The overlap's COMMIT, some 3,000 pages, hands their
// checkpoint to its writer's thread, which its release no longer waits
// for (overlap.detach): the apply writes the third partition beside it.
// The attempt still waits for that thread before it ends, so that once
// the engines are closed no connection is left open on the file: the
// last one closed checkpointed the whole log and removed it, as SQLite
// does, and the file alone holds every row.
func TestOverlapCheckpointEndsWithTheImport(t *testing.T) {
	t.Parallel()
	const partRows, rows = 100000, 300000
	f := newFx(t, testkit.SQLite)
	path := f.write(t, "data.csv", numberedFile(rows, strings.Repeat("x", 40)))
	hold := newPassHold(2)
	e, log := f.openHeld(t, hold)
	res := e.Import(context.Background(), Request{Path: path, Mapping: Mapping{Table: "t"}, PartitionRows: partRows, Lease: time.Minute, Progress: hold.progress})
	if res.Err != nil || res.Outcome != Imported || res.Rows.Inserted != rows || res.Partitions.Committed != 3 {
		t.Fatalf("%s (%v): rows %+v, partitions %+v; want imported, %d rows in 3 partitions", res.Outcome, res.Err, res.Rows, res.Partitions, rows)
	}
	if !log.has(overlapKeptLog) {
		t.Fatalf("the overlap was not kept:\n%s", log)
	}
	for _, e := range []*Engine{e, f.e} {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(f.tg.Path + "-wal"); err == nil {
		t.Fatalf("the write-ahead log is left after the import (%d bytes): a connection on the file outlived the engines", st.Size())
	}
	f.wantNumbered(t, rows, strings.Repeat("x", 40))
}
