package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/idemport/idemport/internal/proc"
	"github.com/idemport/idemport/pipeline/internal/store"
)

// BusyError says which attempts hold what a run needed and could not take
// over: leases of live attempts, or the database's write lock held by a
// writer frozen inside its transaction. The run's outcome is Busy (exit 4).
type BusyError struct {
	// What says what is held ("holds the database's write lock").
	What string
	// Holders describes each holding attempt: its ID, host:pid, and on
	// this host whether its process is stopped.
	Holders []Holder
	// Waited is true when the run waited (--wait) and the holder still had
	// not finished.
	Waited bool
}

// Holder is an attempt that holds a lease a run needed.
type Holder struct {
	Attempt string `json:"attempt_id"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	// Stopped is true when the holder runs on this host and its process is
	// stopped (SIGSTOP, Ctrl-Z): it will not finish until resumed.
	Stopped bool `json:"stopped"`
	// partitions are the unfinished partitions it holds.
	partitions []int
}

func (e *BusyError) Error() string {
	if e.Waited {
		return e.Holding() + "; waited as long as --wait allowed"
	}
	return e.Holding() + "; rerun later, or with --wait to wait for it"
}

// Holding says who holds what ("busy: attempt … (host:pid) holds …"),
// without what to do about it: Error's text up to its advice.
func (e *BusyError) Holding() string {
	var b strings.Builder
	b.WriteString("busy: ")
	switch len(e.Holders) {
	case 0:
		b.WriteString("another process " + e.What)
	default:
		for i, h := range e.Holders {
			if i > 0 {
				b.WriteString(" and ")
			}
			fmt.Fprintf(&b, "attempt %s (%s:%d", h.Attempt, h.Host, h.PID)
			if h.Stopped {
				fmt.Fprintf(&b, ", stopped: resume it with `kill -CONT %d` or end it", h.PID)
			}
			b.WriteString(")")
		}
		b.WriteString(" " + e.What)
	}
	return b.String()
}

// busy returns a BusyError naming the attempts other than l's that hold
// leases on its operation (its partitions' and its planning lease), live
// or expired: a frozen holder's lease may have run out while it still
// holds its transaction's locks. waited says the run waited for them
// (--wait).
func (l leases) busy(ctx context.Context, what string, waited bool) *BusyError {
	e := &BusyError{What: what, Waited: waited}
	held := map[string][]int{}
	var ids []string
	if parts, err := l.st.CP.Partitions(ctx, l.st.DB, l.op); err == nil {
		for _, p := range parts {
			if !p.Done && p.LeaseAttempt != "" && p.LeaseAttempt != l.attempt {
				if _, ok := held[p.LeaseAttempt]; !ok {
					ids = append(ids, p.LeaseAttempt)
				}
				held[p.LeaseAttempt] = append(held[p.LeaseAttempt], p.Index)
			}
		}
	}
	if op, err := l.st.Ledger.Find(ctx, l.st.DB, l.key); err == nil && op != nil && op.LeaseAttempt != "" && held[op.LeaseAttempt] == nil && op.LeaseAttempt != l.attempt {
		ids = append(ids, op.LeaseAttempt)
	}
	for _, a := range ids {
		h, pid, _, ok, err := l.st.Ledger.Process(ctx, l.st.DB, a)
		if err != nil || !ok {
			continue
		}
		e.Holders = append(e.Holders, newHolder(a, h, pid, held[a]))
	}
	return e
}

// newHolder describes attempt id, which runs on host as pid and holds
// partitions: on this host, whether its process is stopped.
func newHolder(id, host string, pid int, partitions []int) Holder {
	here, _ := os.Hostname()
	return Holder{Attempt: id, Host: host, PID: pid, Stopped: host == here && proc.IsStopped(pid), partitions: partitions}
}

// The states of an attempt that recorded no end, as status and history
// show it.
const (
	// HolderRunning: its process runs (or runs on another host with a live
	// lease).
	HolderRunning = store.HolderRunning
	// HolderStopped: its process, on this host, is stopped (SIGSTOP,
	// Ctrl-Z); it holds its leases until resumed or ended.
	HolderStopped = store.HolderStopped
	// HolderGone: its process, on this host, has ended, or its lease has
	// expired: a rerun takes its work over.
	HolderGone = store.HolderGone
)

// locked returns the BusyError of a run that waited as long as the
// database allows (--busy-timeout) for a lock another transaction holds
// (LockedBy, leaving this attempt out); Waited says the run waited (--wait).
func (h *holding) locked(ctx context.Context) *BusyError {
	e := LockedBy(ctx, h.e.st, h.log, "this import", h.attempt.ID)
	e.Waited = h.req.Wait > 0
	return e
}

// LockedBy returns the BusyError of a command (an import, an operator's
// command on st) that waited as long as the database allows
// (--busy-timeout) for a lock another transaction holds: SQLite's write
// lock, or on PostgreSQL and MariaDB a row, table or advisory lock. needs
// names the command in its What ("this import"). Any running attempt, of
// any operation, may hold the lock but self (the command's own attempt,
// or ""); those that run on this host in a stopped process are the ones
// that cannot let go, and are named alone when there are any. Attempts
// found dead on this host are left out. When the running attempts cannot
// be read, log gets a warning and the error names no one.
func LockedBy(ctx context.Context, st *store.Store, log *slog.Logger, needs, self string) *BusyError {
	what := "holds a lock " + needs + " needs, inside its transaction"
	if _, rowLocks := st.Driver.SkipLocked(""); !rowLocks {
		what = "holds the database's write lock inside its transaction"
	}
	e := &BusyError{What: what}
	running, err := st.Ledger.Running(ctx, st.DB)
	if err != nil {
		log.Warn("could not read which attempts are running", "err", err)
		return e
	}
	here, _ := os.Hostname()
	var stopped []Holder
	for _, a := range running {
		if a.ID == self || (a.Host == here && proc.Gone(a.PID, a.ProcStart)) {
			continue
		}
		holder := newHolder(a.ID, a.Host, a.PID, nil)
		e.Holders = append(e.Holders, holder)
		if holder.Stopped {
			stopped = append(stopped, holder)
		}
	}
	if len(stopped) > 0 {
		e.Holders = stopped
	}
	return e
}

// frozenInTransaction reports whether a holder of a's operation that is
// stopped on this host holds one of its partitions inside an open
// transaction: it cannot be taken over even once its lease expires.
func (a *applier) frozenInTransaction(ctx context.Context, e *BusyError) bool {
	for _, h := range e.Holders {
		if !h.Stopped {
			continue
		}
		for _, idx := range h.partitions {
			if locked, err := a.e.st.CP.InTransaction(ctx, a.e.st.DB, a.op, idx); err == nil && locked {
				return true
			}
		}
	}
	return false
}

// expiredInTransaction reports whether a partition of a's operation whose
// lease another attempt let expire is still locked by an open transaction:
// Claim's SKIP LOCKED passes it over, so it cannot be taken over until that
// transaction ends. A claimable partition that is not so locked, or whose
// lease has not expired, only looked free for a moment (another live
// attempt's claim of it was not yet committed, or its lease ran out after
// this run's last claim): that is no reason to be busy.
func (a *applier) expiredInTransaction(ctx context.Context) bool {
	_, now, err := a.e.st.Ledger.Get(ctx, a.e.st.DB, a.id.Key)
	if err != nil {
		return false
	}
	parts, err := a.e.st.CP.Partitions(ctx, a.e.st.DB, a.op)
	if err != nil {
		return false
	}
	for _, p := range parts {
		if p.Done || p.LeaseAttempt == "" || p.LeaseAttempt == a.attempt.ID || p.LeaseExpires > now {
			continue
		}
		if locked, err := a.e.st.CP.InTransaction(ctx, a.e.st.DB, a.op, p.Index); err == nil && locked {
			return true
		}
	}
	return false
}
