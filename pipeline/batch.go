package pipeline

import (
	"context"
	"fmt"
	"time"
)

// BatchOptions configure ImportAll. The zero value imports every request
// with no callbacks and delivers events within DefaultNotifyTimeout.
type BatchOptions struct {
	// DeliveryBudget bounds the time the whole batch spends delivering
	// events to the engine's sinks (Options.Notify), over all its delivery
	// passes; 0 means DefaultNotifyTimeout. Once it is spent, each later
	// pass still gets a millisecond: what is left undelivered stays owed,
	// for the next run or Deliver.
	DeliveryBudget time.Duration
	// OnStart, when not nil, is called before the import of reqs[i] of n
	// with a copy of the request, which it may change (to set Progress).
	OnStart func(i, n int, req *Request)
	// OnImported, when not nil, is called as soon as a file's import
	// returns, before its events are delivered.
	OnImported func(*Result)
	// OnResult, when not nil, is called with each result once its events
	// are delivered (Result.Notified set), before the next file starts. An
	// error from it stops the batch: ImportAll returns it.
	OnResult func(*Result) error
	// OnWarning, when not nil, is told each error that does not change any
	// result (a delivery pass that failed, a delivery state that could not
	// be read) when it happens. Summary.Warnings keeps them too.
	OnWarning func(error)
}

// Summary is what ImportAll did.
type Summary struct {
	// Results holds one result per file imported, in the order of the
	// requests; shorter than them when the context was cancelled or
	// OnResult failed.
	Results []*Result
	// Delivery adds up the batch's delivery passes: deliveries made and
	// refused for good, the last error of each sink, and what the outbox
	// still owed after the last pass. Zero when no pass ran.
	Delivery DeliveryReport
	// Delivered is true when at least one delivery pass ran: the engine
	// has sinks and the context was not cancelled before a file finished.
	Delivered bool
	// Warnings are the errors told to OnWarning, in order.
	Warnings []error
}

// NotClean returns the results of the files that did not import cleanly
// (see Result.Clean), in order: what decides a run's exit status.
func (s *Summary) NotClean() []*Result {
	var bad []*Result
	for _, r := range s.Results {
		if !r.Clean() {
			bad = append(bad, r)
		}
	}
	return bad
}

// Metrics counts the summary's results, with no feed.
func (s *Summary) Metrics() RunMetrics {
	var m RunMetrics
	m.Add("", s.Results...)
	return m
}

// Clean reports whether the file ended as a scheduled run wants it to:
// imported, resumed, a duplicate, skipped (too young) or a stale snapshot.
// Any other outcome (conflict, busy, refused, failed, interrupted) needs a
// look or a rerun.
func (r *Result) Clean() bool {
	switch r.Outcome {
	case Imported, Resumed, Duplicate, Skipped, Stale:
		return true
	}
	return false
}

// ImportAll imports reqs one after another, as the command does: a file
// that does not import cleanly does not stop the others; it stops before
// the next file once ctx is done. When the engine has sinks, after each
// file that recorded an event (and after the first file in any case, for
// what earlier runs left owed) it delivers what the outbox owes, all
// passes within one o.DeliveryBudget, and sets the file's Result.Notified.
//
// The error is only OnResult's; every file's failure is in its result.
// The summary is never nil. ImportAll is safe to call concurrently with
// other imports on e.
func (e *Engine) ImportAll(ctx context.Context, reqs []Request, o BatchOptions) (*Summary, error) {
	if err := e.st.Present(); err != nil {
		return &Summary{}, err
	}
	b := newBatch(e, o)
	err := b.run(ctx, reqs)
	return b.sum, err
}

func newBatch(e *Engine, o BatchOptions) *batch {
	b := &batch{e: e, o: o, deliver: e.st.Deliver, now: time.Now, left: o.DeliveryBudget, sum: &Summary{}}
	if b.left <= 0 {
		b.left = DefaultNotifyTimeout
	}
	return b
}

// batch is one ImportAll: its budget and what it did so far. deliver and
// now are the engine's delivery pass and the clock, replaced in tests.
type batch struct {
	e       *Engine
	o       BatchOptions
	deliver func(ctx context.Context, timeout time.Duration) (DeliveryReport, error)
	now     func() time.Time
	left    time.Duration // of the delivery budget
	sum     *Summary
}

func (b *batch) run(ctx context.Context, reqs []Request) error {
	for i, req := range reqs {
		if ctx.Err() != nil {
			break
		}
		if b.o.OnStart != nil {
			b.o.OnStart(i, len(reqs), &req)
		}
		res := b.e.Import(ctx, req)
		if b.o.OnImported != nil {
			b.o.OnImported(res)
		}
		if len(b.e.st.Sinks) > 0 && ctx.Err() == nil && (res.EventID != "" || !b.sum.Delivered) {
			b.deliverAfter(ctx, res)
		}
		b.sum.Results = append(b.sum.Results, res)
		if b.o.OnResult != nil {
			if err := b.o.OnResult(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliverAfter runs a delivery pass after res within what is left of the
// budget (a millisecond at least), adds its report to the summary's, and
// says in res how far its event is delivered.
func (b *batch) deliverAfter(ctx context.Context, res *Result) {
	t0 := b.now()
	rep, err := b.deliver(ctx, max(b.left, time.Millisecond))
	b.left -= b.now().Sub(t0)
	if err != nil {
		b.warn(fmt.Errorf("deliver events: %w", err))
	}
	d := &b.sum.Delivery
	d.Delivered += rep.Delivered
	d.Failed += rep.Failed
	d.Pending = rep.Pending
	if d.Errors == nil {
		d.Errors = map[string]string{}
	}
	for k, v := range rep.Errors {
		d.Errors[k] = v
	}
	b.sum.Delivered = true
	if res.EventID != "" {
		if res.Notified, err = b.e.st.EventState(context.WithoutCancel(ctx), res.EventID); err != nil {
			b.warn(fmt.Errorf("read delivery of event %s: %w", res.EventID, err))
		}
	}
}

func (b *batch) warn(err error) {
	b.sum.Warnings = append(b.sum.Warnings, err)
	if b.o.OnWarning != nil {
		b.o.OnWarning(err)
	}
}
