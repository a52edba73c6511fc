package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/testkit"
)

// TestEarlyBeginLetsGoWithinTheOverlapsTime holds import A, a first
// import of a new 11 MB file into a new PostgreSQL table, after its file
// is identified and before its claim (at after-identify), once its early
// begin has created the table in a transaction of its own
// (inside-early-overlap). That transaction holds the table's creation
// (Ensure's lock on the name), and its hold counts against the overlap's
// time, here 300 ms, as the overlap's own would: past it the early begin
// rolls back, however long the claim is in coming. So import B, a small
// file into the same table, creates the table and is imported while A is
// still held; held for as long as A is, it would wait for A. Once let go,
// A imports its file into the table B made: the table holds B's rows and
// A's, value by value as text, each once.
func TestEarlyBeginLetsGoWithinTheOverlapsTime(t *testing.T) {
	t.Parallel()
	const rows = 150000
	pad := strings.Repeat("x", 40)
	testkit.EachOf(t, []string{testkit.Postgres}, func(t *testing.T, name string) {
		f := newFx(t, name)
		pathA := f.write(t, "a.csv", numberedFile(rows, pad))
		var bFile strings.Builder
		bFile.WriteString("id,v\n")
		for i := rows + 1; i <= rows+3; i++ {
			bFile.WriteString(numberedLine(i, pad))
		}
		pathB := f.write(t, "b.csv", bFile.String())

		begun, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		fpA := failpointsFunc(func(name string) error {
			switch name {
			case "inside-early-overlap":
				once.Do(func() { close(begun) })
			case "after-identify":
				select {
				case <-begun:
				case <-time.After(time.Minute):
					return nil // no early begin: the test says so below
				}
				select {
				case <-release:
				case <-time.After(3 * time.Minute):
				}
			}
			return nil
		})
		logA := &logRecorder{}
		eA := f.open(t, Options{Failpoints: fpA, Logger: slog.New(logA)})
		eA.overlapWait = 300 * time.Millisecond
		resA := make(chan *Result, 1)
		go func() {
			resA <- eA.Import(context.Background(), Request{Path: pathA, Mapping: Mapping{Table: "t"}, Lease: time.Minute})
		}()
		released := false
		let := func() {
			if !released {
				released = true
				close(release)
			}
		}
		defer let()
		select {
		case <-begun:
		case r := <-resA:
			t.Fatalf("A ended before an early begin: %s (%v)", r.Outcome, r.Err)
		case <-time.After(time.Minute):
			t.Fatalf("A began no transaction before its claim: this test proves nothing\n%s", logA)
		}

		eB := f.open(t, Options{BusyTimeout: 3 * time.Minute})
		resB := make(chan *Result, 1)
		go func() {
			resB <- eB.Import(context.Background(), Request{Path: pathB, Mapping: Mapping{Table: "t"}, Lease: time.Minute})
		}()
		select {
		case r := <-resB:
			if r.Err != nil || r.Outcome != Imported || r.Rows.Inserted != 3 {
				t.Fatalf("B, while A was held before its claim: %s (%v), rows %+v", r.Outcome, r.Err, r.Rows)
			}
		case r := <-resA:
			t.Fatalf("A ended while held: %s (%v)", r.Outcome, r.Err)
		case <-time.After(2 * time.Minute):
			t.Fatalf("B was not imported in 2 minutes while A was held before its claim: A's early begin held the table's creation past the overlap's time\n%s", logA)
		}
		if !logA.has(earlyExpiredLog) {
			t.Fatalf("B went through without A's early begin rolled back:\n%s", logA)
		}
		let()
		var r *Result
		select {
		case r = <-resA:
		case <-time.After(3 * time.Minute):
			t.Fatal("A is stuck")
		}
		if r.Err != nil || r.Outcome != Imported || r.Rows.Inserted != rows {
			t.Fatalf("A: %s (%v), rows %+v; want imported, %d rows", r.Outcome, r.Err, r.Rows, rows)
		}
		got := f.rows(t, `SELECT `+f.tg.Text("t.id")+`, v FROM t ORDER BY t.id`)
		if len(got) != rows+3 {
			t.Fatalf("t holds %d rows, want %d", len(got), rows+3)
		}
		for i, g := range got {
			if want := []any{fmt.Sprint(i + 1), fmt.Sprintf("value of row %d %s", i+1, pad)}; fmt.Sprint(g) != fmt.Sprint(want) {
				t.Fatalf("row %d: %v, want %v", i+1, g, want)
			}
		}
	})
}
