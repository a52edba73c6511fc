package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
)

// errUnanswered stops the work of an attempt whose database stopped
// answering for longer than its lease: see heartbeat.
var errUnanswered = errors.New("the database stopped answering")

// unansweredRecord bounds how long a run whose database stopped answering
// tries to record its end: its leases have run out already, and the next
// run finds it dead or expired whether it records it or not.
const unansweredRecord = 2 * time.Second

// pingWait is how long, at least, heartbeat waits for the database to
// answer a ping once the leases ran out unrenewed.
const pingWait = 2 * time.Second

// leases are an attempt's leases: its planning lease on the operation and
// those of the partitions it holds, which heartbeat renews. Through them
// the attempt also names (busy) and reaps (reapDead) the other holders of
// the operation's leases.
type leases struct {
	st      *store.Store
	key     ledger.Key
	op      checkpoint.Op
	attempt string
	host    string // the attempt's (ledger.Attempt.Host)
	lease   time.Duration
	leaseMs int64
	log     *slog.Logger
}

// leases are the leases of h's attempt.
func (h *holding) leases() leases {
	return leases{st: h.e.st, key: h.id.Key, op: h.op, attempt: h.attempt.ID, host: h.attempt.Host, lease: h.req.Lease, leaseMs: h.leaseMs, log: h.log}
}

// heartbeat renews this attempt's leases until the returned stop is
// called. The work runs under the returned context, derived from ctx: when
// the leases ran out without the database answering a renewal, nor then a
// ping (the network to it stalled without closing, say), others may take
// the work over, and the statements in flight (a COPY waiting on the
// stalled connection) would wait for ever holding their locks: that
// context is then cancelled, its cause wrapping errUnanswered, and so
// are the COMMITs and ROLLBACKs in flight under it and the contexts
// detached from it (store.Unanswered), which a cancel does not otherwise
// reach: with two workers, one may be waiting for its COMMIT's reply when
// the network stalls. A renewal may wait until the leases would run out;
// one that only waits for a lock (of this attempt's own partition
// transaction, say) while the database answers the ping cancels nothing.
func heartbeat(ctx context.Context, l leases) (context.Context, func()) {
	work, silent := store.Unanswered(ctx)
	work, stopWork := context.WithCancelCause(work)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.keep(ctx, func(cause error) {
			stopWork(cause) // first: a COMMIT it ends finds the work stopped
			silent(cause)
		})
	}()
	return work, func() { cancel(); <-done; stopWork(nil) }
}

// keep renews the leases every third of their length until ctx is done.
// When they ran out unrenewed and the database does not answer a ping
// either, it stops the work with stopWork and returns.
func (l leases) keep(ctx context.Context, stopWork context.CancelCauseFunc) {
	every := max(l.lease/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	renewed := time.Now() // the claim just took or renewed the leases
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		asked := time.Now()
		err := l.renew(ctx, max(every, time.Until(renewed.Add(l.lease))))
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			renewed = asked
			continue
		}
		l.log.Warn("heartbeat failed", "err", err)
		if time.Since(renewed) < l.lease {
			continue
		}
		// The leases ran out: does the database answer at all?
		perr := l.ping(ctx, every)
		switch {
		case ctx.Err() != nil:
			return
		case perr == nil:
			renewed = time.Now() // it does: the next renewal may wait a lease again
		default:
			stopWork(l.unanswered(renewed, err))
			return
		}
	}
}

// renew renews the attempt's planning lease and its partitions' leases,
// waiting at most wait.
func (l leases) renew(ctx context.Context, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := l.st.Ledger.Heartbeat(ctx, l.st.DB, l.key, l.attempt, l.leaseMs); err != nil {
		return err
	}
	_, err := l.st.CP.Renew(ctx, l.st.DB, l.op, l.attempt, l.leaseMs)
	return err
}

// ping asks the database whether it answers at all, waiting at least
// pingWait, and at least every.
func (l leases) ping(ctx context.Context, every time.Duration) error {
	pctx, pcancel := context.WithTimeout(ctx, max(every, pingWait))
	defer pcancel()
	return l.st.DB.PingContext(pctx)
}

// unanswered is why the work stops when the database answered neither a
// renewal (err, the last one's error) nor a ping since the leases were
// last renewed.
func (l leases) unanswered(renewed time.Time, err error) error {
	silent := time.Since(renewed)
	return fmt.Errorf("%w for %s, longer than the lease (%s): this attempt's leases ran out, so it stopped its work; a rerun resumes (%w)",
		errUnanswered, silent.Round(time.Second), l.lease, err)
}
