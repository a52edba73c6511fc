package mysql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/idemport/idemport/sink"
)

// signature is what Describe said of a table, in one line: each column's
// name, SQL type and kind, and the keys.
func signature(t *sink.Table) string {
	if t == nil {
		return "<absent>"
	}
	var cols []string
	for _, c := range t.Columns {
		cols = append(cols, c.Name+" "+c.SQLType+" "+c.Kind.String())
	}
	return strings.Join(cols, ", ") + fmt.Sprintf(" keys %v", t.Keys)
}

// TestDescribeWhileAltered: a table that exists is described as one of
// the states it has been in, never as absent nor as a mix of two, while
// another connection alters it: an instant ADD COLUMN, a MODIFY COLUMN
// that copies the table, and a DROP COLUMN, round and round, each ALTER
// once each describer has ended a describe since the last. Describe
// runs on the pool (autocommit, as the plan describes), and in a
// transaction that already holds another table's metadata lock (as
// --evolve's describes run), where the server does not wait for a lock
// that information_schema's readers would wait for elsewhere. It is
// bounded by the number of rounds of the ALTERs, not by time.
func TestDescribeWhileAltered(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	exec(t, db, `CREATE TABLE other (id BIGINT PRIMARY KEY)`,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, doc JSON, v BIGINT)`)
	d := Driver{}
	states := map[string]bool{}
	record := func() {
		t.Helper()
		tbl, err := d.Describe(t.Context(), db, "t")
		if err != nil {
			t.Fatal(err)
		}
		states[signature(tbl)] = true
	}
	alters := []string{
		`ALTER TABLE t ADD COLUMN x BIGINT`,
		`ALTER TABLE t MODIFY COLUMN x VARCHAR(30)`,
		`ALTER TABLE t DROP COLUMN x`,
	}
	record()
	for _, a := range alters {
		exec(t, db, a)
		record()
	}
	if len(states) != 3 {
		t.Fatalf("the ALTERs make %d states of t, want 3: %v", len(states), states)
	}
	const rounds = 60
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	ended := sync.NewCond(&mu) // a describe ended
	seen := map[string]int{}
	describes := 0
	done := make([]int, 2) // the describes each describer ended
	describe := func(i int, how string, q func() (*sink.Table, error)) {
		defer wg.Done()
		for ctx.Err() == nil {
			tbl, err := q()
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			describes++
			done[i]++
			if err != nil {
				seen[how+": error "+err.Error()]++
			} else if s := signature(tbl); !states[s] {
				seen[how+": "+s]++
			}
			ended.Broadcast()
			mu.Unlock()
		}
	}
	wg.Add(2)
	go describe(0, "on the pool", func() (*sink.Table, error) { return d.Describe(ctx, db, "t") })
	go describe(1, "in a transaction", func() (*sink.Table, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM other WHERE 1 = 0`); err != nil {
			return nil, err
		}
		return d.Describe(ctx, tx, "t")
	})
	for range rounds {
		for _, a := range alters {
			if _, err := db.ExecContext(t.Context(), a); err != nil {
				stop()
				wg.Wait()
				t.Fatalf("%s: %v", a, err)
			}
			// The next ALTER waits for a describe of each describer to
			// end, one that may have met this ALTER: ALTERs back to back
			// on an idle server leave a describe inside a transaction
			// no moment between two to read the table whole, which is
			// not what imports do.
			mu.Lock()
			after := slices.Clone(done)
			for done[0] == after[0] || done[1] == after[1] {
				ended.Wait()
			}
			mu.Unlock()
		}
	}
	stop()
	wg.Wait()
	for s, n := range seen {
		t.Errorf("%d of %d describes said %s", n, describes, s)
	}
	t.Logf("%d describes during %d ALTERs", describes, rounds*len(alters))
}
