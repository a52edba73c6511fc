// Package failpoint makes a process fail on purpose at a named point of the
// pipeline, so that tests can prove what a crash there leaves behind.
//
// A Set is parsed from one specification, which the command reads from the
// IDEMPORT_FAILPOINT environment variable in one place. A nil *Set is off
// and Hit costs one nil check.
//
// The specification is NAME[:N][:ACTION], comma-separated for several:
// the N-th time (1-based, default 1) the pipeline passes point NAME, ACTION
// happens. ACTION is kill (the default: SIGKILL to the process itself, so no
// deferred cleanup runs; on Windows TerminateProcess with exit code
// KilledExitCode), stop (SIGSTOP to itself, to simulate a stall until
// someone sends SIGCONT; where the platform has no SIGSTOP, as on Windows,
// Parse refuses it), or error (Hit returns an error, for a clean failure).
package failpoint

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrInjected is returned by Hit for the error action.
var ErrInjected = errors.New("injected failure")

// KilledExitCode is the exit code of a process the kill action ended on
// Windows, where there are no signals: 128+9, as a shell reports SIGKILL.
const KilledExitCode = 137

// Names lists the points the pipeline passes, in order. Partition points
// are counted per partition.
var Names = []string{
	"after-identify",          // the file is hashed, nothing is claimed
	"inside-early-overlap",    // PostgreSQL: a new file's table is created beside its claim, in the overlap's transaction, not committed
	"after-claim",             // the attempt is recorded, nothing is planned
	"replace-prepared",        // --replace: inside the plan's transaction (with --atomic, the completing one), the earlier version's rows removed (ordinal mode) or their ordinals forgotten (by key), not committed
	"after-ddl-record",        // where DDL commits (MariaDB): a table the operation creates is recorded as its own, not yet created; or --evolve's changes are recorded with the attempt, not yet made
	"after-ddl",               // where DDL commits: a DDL step (a table created, columns added or widened) committed, the transaction that needs it not begun
	"inside-overlap",          // a new file's partition is written while the plan pass runs, in the transaction that is to store the plan, not committed
	"after-plan",              // the plan is stored, no partition is applied
	"after-partition-claim",   // a partition is leased, its transaction not begun
	"inside-isolation",        // a batch the database refused is rolled back to its savepoint, to be written in halves
	"inside-mend",             // a range of a reused spool copy that failed its check is half written back with the object's bytes
	"inside-partition",        // a partition's rows are written but not committed
	"before-partition-commit", // a partition's rows, its done mark and its counts are written, the COMMIT not sent (in a group of partitions on SQLite, the next one may follow in the same transaction)
	"after-partition-commit",  // a partition committed (passed once for each partition of a group, after its COMMIT)
	"before-finalize",         // every partition committed, the operation not completed
	"before-move",             // --atomic: inside the completing transaction, the staged rows classified (new, changed, unchanged, older), not yet moved
	"inside-move",             // --atomic into MariaDB: inside the completing transaction, the staged rows' stored keys updated, the new ones not yet inserted
	"before-sweep",            // snapshot: inside the completing transaction, before the sweep
	"after-sweep",             // snapshot: inside the completing transaction, swept but not committed
	"replace-swept",           // --replace by key: inside the completing transaction, the earlier version's keys the new one lacks deleted, not committed
	"before-event",            // inside an effect's transaction (completion, undo, replay): the effect written, its outbox event not yet
	"inside-finalize",         // the operation is marked completed inside the completing transaction, not yet committed
	"after-finalize",          // the operation is completed, the attempt not ended
	"inside-undo",             // undo: its transaction did all its work, not committed
	"after-undo",              // undo: committed, nothing printed
	"before-publish",          // an event delivery is claimed (its effect committed), nothing sent
	"after-publish",           // the sink acknowledged a delivery, not yet marked delivered
	"during-retry",            // a delivery tried before is claimed again, nothing sent yet
}

type point struct {
	n      int
	action string
	seen   int
}

// Set is a parsed specification. It is safe for concurrent use.
type Set struct {
	mu     sync.Mutex
	points map[string]*point
}

// Parse parses a specification; an empty one returns nil (off).
func Parse(spec string) (*Set, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	s := &Set{points: map[string]*point{}}
	for _, item := range strings.Split(spec, ",") {
		parts := strings.Split(strings.TrimSpace(item), ":")
		name := parts[0]
		known := false
		for _, n := range Names {
			known = known || n == name
		}
		if !known {
			return nil, fmt.Errorf("failpoint %q: unknown point (known: %s)", name, strings.Join(Names, ", "))
		}
		p := &point{n: 1, action: "kill"}
		for _, arg := range parts[1:] {
			if n, err := strconv.Atoi(arg); err == nil && n > 0 {
				p.n = n
				continue
			}
			switch arg {
			case "stop":
				if !canStop {
					return nil, fmt.Errorf("failpoint %q: stop is not supported on %s, which has no SIGSTOP", item, runtime.GOOS)
				}
				p.action = arg
			case "kill", "error":
				p.action = arg
			default:
				return nil, fmt.Errorf("failpoint %q: bad argument %q", item, arg)
			}
		}
		s.points[name] = p
	}
	return s, nil
}

// Hit marks that the pipeline reached point name and acts if it is armed.
func (s *Set) Hit(name string) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	p := s.points[name]
	fire := false
	if p != nil {
		p.seen++
		fire = p.seen == p.n
	}
	s.mu.Unlock()
	if !fire {
		return nil
	}
	switch p.action {
	case "stop":
		return stop()
	case "error":
		return fmt.Errorf("%w at %s", ErrInjected, name)
	}
	kill()
	for { // never return, should the kill be late
		time.Sleep(time.Second)
	}
}
