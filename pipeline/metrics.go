package pipeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/idemport/idemport/ledger"
)

// MetricKey labels one metric value: the feed of the results counted
// (empty outside a run of feeds, and for the ledger's values), the table,
// and the value of the family's own label (an outcome, a kind of rows or
// partitions, a state; empty for a family without one).
type MetricKey struct {
	Feed, Table, Label string
}

// RunMetrics are the numbers a run reports about its own files, summed by
// feed and table: what this run did, so zero rows for a duplicate. The
// zero value is empty and ready to use; it is not safe for concurrent use.
type RunMetrics struct {
	// Files counts files by outcome (Label: imported, duplicate, …).
	Files map[MetricKey]int64
	// Rows sums rows by kind (Label: read, inserted, updated, unchanged,
	// stale, superseded, rejected, and deleted by snapshot sweeps).
	Rows map[MetricKey]int64
	// Partitions sums partitions by kind (Label: total, skipped, committed).
	Partitions map[MetricKey]int64
	// RecoveredLeases counts the leases of dead or stalled attempts taken
	// over (Label empty).
	RecoveredLeases map[MetricKey]int64
}

// Add counts rs as results of feed.
func (m *RunMetrics) Add(feed string, rs ...*Result) {
	if m.Files == nil {
		m.Files, m.Rows, m.Partitions, m.RecoveredLeases = map[MetricKey]int64{}, map[MetricKey]int64{}, map[MetricKey]int64{}, map[MetricKey]int64{}
	}
	for _, r := range rs {
		k := func(label string) MetricKey { return MetricKey{feed, r.Table, label} }
		m.Files[k(string(r.Outcome))]++
		for kind, n := range map[string]int64{"read": r.Rows.Read, "inserted": r.Rows.Inserted, "updated": r.Rows.Updated,
			"unchanged": r.Rows.Unchanged, "stale": r.Rows.Stale, "superseded": r.Rows.Superseded, "rejected": r.Rows.Rejected, "deleted": r.Deleted} {
			m.Rows[k(kind)] += n
		}
		for kind, n := range map[string]int64{"total": r.Partitions.Total, "skipped": r.Partitions.Skipped, "committed": r.Partitions.Committed} {
			m.Partitions[k(kind)] += n
		}
		m.RecoveredLeases[k("")] += r.RecoveredLeases
	}
}

// LedgerMetrics are the numbers the ledger and the outbox of a target
// hold, whichever run wrote them.
type LedgerMetrics struct {
	// LastSuccess is, by table, when an import into it last completed, in
	// Unix milliseconds; a table without a completed import is absent.
	LastSuccess map[string]int64
	// Operations counts the operations of the ledger by table and state
	// (Label); undone operations are left out, as status leaves them out.
	Operations map[MetricKey]int64
	// OutboxPending is the event deliveries the outbox still owes to a sink.
	OutboxPending int64
}

// LedgerMetrics reads the target's ledger and outbox for their metrics.
// When the ledger cannot be read it returns the zero LedgerMetrics (nil
// maps) and the error; when only the outbox cannot, the ledger's numbers
// and the error.
func (e *Engine) LedgerMetrics(ctx context.Context) (LedgerMetrics, error) {
	if !e.st.Exists() {
		return LedgerMetrics{}, nil
	}
	if err := e.st.Ready(ctx); err != nil {
		return LedgerMetrics{}, fmt.Errorf("read the ledger: %w", err)
	}
	ops, err := e.st.Ledger.List(ctx, ledger.Filter{})
	if err != nil {
		return LedgerMetrics{}, fmt.Errorf("read the ledger: %w", err)
	}
	// As status counts them: undone operations are resolved.
	ops = slices.DeleteFunc(ops, func(op ledger.Operation) bool { return op.State == ledger.Undone })
	m := LedgerMetrics{LastSuccess: map[string]int64{}, Operations: map[MetricKey]int64{}}
	for _, op := range ops {
		m.Operations[MetricKey{Table: op.Table, Label: string(op.State)}]++
		if op.State == ledger.Completed && op.CompletedAt > m.LastSuccess[op.Table] {
			m.LastSuccess[op.Table] = op.CompletedAt
		}
	}
	m.OutboxPending, err = e.st.PendingDeliveries(ctx)
	return m, err
}
