package ops

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/internal/store"
)

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
	// State is pipeline.HolderRunning, pipeline.HolderStopped or pipeline.HolderGone.
	State string `json:"state"`
}

// Holding returns how the operation's lease holders stand together:
// pipeline.HolderRunning when one of them runs, else pipeline.HolderStopped when one is
// stopped, else pipeline.HolderGone; "" when none holds a lease.
func (o OperationStatus) Holding() string {
	state := ""
	for _, l := range o.Leases {
		switch {
		case l.State == pipeline.HolderRunning:
			return pipeline.HolderRunning
		case l.State == pipeline.HolderStopped, state == "":
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
		return pipeline.HolderRunning
	}
	return "died"
}

// Status lists operations matching f, newest first. Without a state in f,
// undone operations are left out: they are resolved, and shown by History.
// An Engine without a database has none.
func (o *Operator) Status(ctx context.Context, f ledger.Filter) ([]OperationStatus, error) {
	if !o.st.Exists() {
		return nil, nil
	}
	ops, err := o.st.Ledger.List(ctx, f)
	if err != nil {
		return nil, err
	}
	if f.State == "" {
		ops = slices.DeleteFunc(ops, func(op ledger.Operation) bool { return op.State == ledger.Undone })
	}
	return o.withProgress(ctx, ops)
}

// withProgress adds the state of their partitions to operations.
func (o *Operator) withProgress(ctx context.Context, ops []ledger.Operation) ([]OperationStatus, error) {
	out := make([]OperationStatus, len(ops))
	now := time.Now().UnixMilli()
	for i, op := range ops {
		out[i].Operation = op
		if op.LeaseAttempt != "" && op.LeaseExpires > now {
			out[i].Live = append(out[i].Live, op.LeaseAttempt)
		}
		k := checkpoint.Op{Table: op.Table, FileID: op.FileID}
		p, err := o.st.CP.Progress(ctx, o.st.DB, k, "")
		if err != nil {
			return nil, err
		}
		out[i].Partitions = p
		if p.Held > 0 {
			parts, err := o.st.CP.Partitions(ctx, o.st.DB, k)
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
			if err := o.judgeLeases(ctx, &out[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// judgeLeases fills s.Leases: each attempt holding a lease on s, with
// where it runs and how it stands.
func (o *Operator) judgeLeases(ctx context.Context, s *OperationStatus) error {
	holders := slices.Clone(s.Holders)
	planning := ""
	if !s.Planned && s.LeaseAttempt != "" && !slices.Contains(holders, s.LeaseAttempt) {
		planning = s.LeaseAttempt
		holders = append(holders, planning)
	}
	for _, a := range holders {
		host, pid, start, ok, err := o.st.Ledger.Process(ctx, o.st.DB, a)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		s.Leases = append(s.Leases, Lease{Attempt: a, Host: host, PID: pid, Planning: a == planning,
			State: store.HolderState(host, pid, start, slices.Contains(s.Live, a))})
	}
	return nil
}

// History returns the operations of a file (given as a path, which is
// hashed, or as a file ID), current ones first and then past ones
// (superseded, replaced, undone or abandoned: replaced by a newer
// operation), each with its attempts, oldest attempt first. The past
// operations of the file IDs of the current ones found are among them.
func (o *Operator) History(ctx context.Context, fileOrID string, table string) ([]OperationStatus, [][]ledger.AttemptRecord, error) {
	if err := o.st.Present(); err != nil {
		return nil, nil, err
	}
	filters, err := o.st.FileFilters(ctx, fileOrID, table)
	if err != nil {
		return nil, nil, err
	}
	ops, err := o.st.ListAll(ctx, filters, o.st.Ledger.List)
	if err != nil {
		return nil, nil, err
	}
	past, err := o.st.ListAll(ctx, filters, o.st.Ledger.Past)
	if err != nil {
		return nil, nil, err
	}
	if past, err = o.earlierVersions(ctx, ops, past); err != nil {
		return nil, nil, err
	}
	if len(ops)+len(past) == 0 {
		return nil, nil, fmt.Errorf("no operation for %s: it is not a file here, a file ID, a path an import has seen, or the start of a file ID", fileOrID)
	}
	attempts, err := o.ownAttempts(ctx, ops, past)
	if err != nil {
		return nil, nil, err
	}
	st, err := o.withProgress(ctx, ops)
	if err != nil {
		return nil, nil, err
	}
	for _, op := range past {
		st = append(st, OperationStatus{Operation: op})
	}
	return st, attempts, nil
}

// earlierVersions adds to past the past operations of the file IDs of ops
// it does not hold yet, and returns it.
func (o *Operator) earlierVersions(ctx context.Context, ops, past []ledger.Operation) ([]ledger.Operation, error) {
	// A file found by its content shows the versions its file ID had
	// before (replaced, superseded) too.
	for _, op := range ops {
		earlier, err := o.st.Ledger.Past(ctx, ledger.Filter{Table: op.Table, FileID: op.FileID})
		if err != nil {
			return nil, err
		}
		for _, p := range earlier {
			if !slices.ContainsFunc(past, func(q ledger.Operation) bool { return q.Key == p.Key && q.CreatedAt == p.CreatedAt }) {
				past = append(past, p)
			}
		}
	}
	return past, nil
}

// ownAttempts returns the attempts of each of ops, then of each of past,
// each operation's those of its own lifetime.
func (o *Operator) ownAttempts(ctx context.Context, ops, past []ledger.Operation) ([][]ledger.AttemptRecord, error) {
	var attempts [][]ledger.AttemptRecord
	for i, op := range append(ops, past...) {
		as, err := o.st.Ledger.Attempts(ctx, op.Key)
		if err != nil {
			return nil, err
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
	return attempts, nil
}

// Rejects returns the stored rejects of operation k, in ordinal order.
func (o *Operator) Rejects(ctx context.Context, k ledger.Key) ([]ledger.Reject, error) {
	if err := o.st.Present(); err != nil {
		return nil, err
	}
	return o.st.Ledger.Rejects(ctx, o.st.DB, k)
}
