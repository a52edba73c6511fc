package ledger

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Decision is what a run does with an operation, per the claim decision
// table.
type Decision int

// The decisions.
const (
	// Create: no live operation exists (none, or only one that was undone,
	// abandoned or superseded, which is moved to the past); create one and
	// plan.
	Create Decision = iota
	// Plan: the operation exists without a stored plan and nobody live holds
	// the planning lease, or it was refused and this run's reject limit
	// admits its bad rows; take the planning lease and plan.
	Plan
	// Resume: the plan is stored and a partition is free; claim unfinished
	// partitions.
	Resume
	// Duplicate: already completed with the same fingerprint; no effect.
	Duplicate
	// Refuse: already refused with the same fingerprint; refuse again from
	// the stored report.
	Refuse
	// Conflict: the fingerprint differs from the stored one, which has
	// effects; no effect.
	Conflict
	// Busy: another live attempt holds the planning lease, or every
	// unfinished partition.
	Busy
	// Supersede: the stored operation, refused or failed before any
	// partition committed, has another fingerprint; it becomes superseded
	// and a new operation starts, as with Create.
	Supersede
	// Reapply: the stored operation completed with the same fingerprint, but
	// its table no longer exists or the run asks to apply it again; a new
	// attempt applies every partition of the stored plan again.
	Reapply
	// Stale: the run's file is a snapshot older than the last one applied
	// to its table and scope, and no completed operation of it exists (a
	// completed one is decided as above, whatever its age, unless it would
	// be applied again); nothing is written.
	Stale
	// Replace: the stored operation completed with other content and the
	// same mapping, and the run asks to replace it (--replace): it becomes
	// replaced and a new operation starts, as with Create, that removes
	// the earlier version's rows (ordinal mode) or its keys the new version
	// lacks (by key) before it completes.
	Replace
)

var decisionNames = [...]string{"create", "plan", "resume", "duplicate", "refuse", "conflict", "busy", "supersede", "reapply", "stale", "replace"}

func (d Decision) String() string { return decisionNames[d] }

// Situation is everything the claim decision depends on. The caller reads it
// from the ledger, the checkpoints and the target in one transaction.
type Situation struct {
	Op  *Operation // the stored operation, nil when none
	ID  Identity   // the run's identity of the file
	Now int64      // database clock, Unix ms

	// Effect reports that some partition of Op has committed.
	Effect bool
	// TableMissing reports that Op's target table does not exist.
	TableMissing bool
	// Admits reports that the run's reject limit admits the bad rows Op's
	// stored refusal counted (and the refusal was for bad rows, not for a
	// defect no limit admits).
	Admits bool
	// Reapply asks for a completed operation to be applied again.
	Reapply bool
	// Replace asks for a completed operation whose content differs (its
	// mapping the same) to be replaced by the run's file.
	Replace bool
	// Stale reports that the run's file is a snapshot older than the last
	// one applied to its table and scope.
	Stale bool
	// Claimable and Held count Op's unfinished partitions that this run may
	// claim, and that other live attempts hold. A partition held by an
	// attempt of Gone is claimable.
	Claimable, Held int64
	// Gone lists the attempts holding Op's leases that ran on this host in
	// a process that no longer exists: their leases are taken over at once,
	// as if expired.
	Gone []string
}

// Decide applies the claim decision table to s. It is the one place the
// table is written: import, plan, import --dry-run and verify all decide
// through it. It also returns the attempt whose expired planning lease the
// run takes over, if any.
func Decide(s Situation) (Decision, string) {
	op, id := s.Op, s.ID
	if s.Stale && (op == nil || op.State != Completed) {
		return Stale, ""
	}
	if op == nil {
		return Create, ""
	}
	switch op.State {
	case Undone, Abandoned:
		return Create, ""
	}
	if op.ContentDigest != id.ContentDigest || !id.SameMapping(op) {
		if op.State == Refused || (op.State == Failed && !s.Effect) {
			return Supersede, ""
		}
		if op.State == Completed && s.Replace && id.SameMapping(op) {
			if s.Stale {
				// An older snapshot than the last applied: its sweep
				// cannot run once it is written.
				return Stale, ""
			}
			return Replace, ""
		}
		return Conflict, ""
	}
	switch op.State {
	case Completed:
		if s.TableMissing || s.Reapply {
			if s.Stale {
				// Applied again, it would write its rows and then find a
				// newer snapshot current: its sweep cannot run.
				return Stale, ""
			}
			return Reapply, ""
		}
		return Duplicate, ""
	case Refused:
		if s.Admits {
			return Plan, ""
		}
		return Refuse, ""
	case Failed:
		if op.Planned {
			return resume(s), ""
		}
		return Plan, ""
	}
	if op.Planned {
		return resume(s), ""
	}
	if op.LeaseAttempt != "" && op.LeaseExpires > s.Now && !slices.Contains(s.Gone, op.LeaseAttempt) {
		return Busy, ""
	}
	return Plan, op.LeaseAttempt
}

// resume is Resume unless other live attempts hold every unfinished
// partition.
func resume(s Situation) Decision {
	if s.Claimable == 0 && s.Held > 0 {
		return Busy
	}
	return Resume
}

// Difference says in words how id differs from the stored operation op:
// what differs ("content", "mapping" or "content and mapping") and how.
func Difference(op *Operation, id Identity) (what, how string) {
	var parts, details []string
	if op.ContentDigest != id.ContentDigest {
		parts = append(parts, "content")
		details = append(details, fmt.Sprintf("stored %s, this file %s", ShortDigest(op.ContentDigest), ShortDigest(id.ContentDigest)))
	}
	if !id.SameMapping(op) {
		parts = append(parts, "mapping")
		details = append(details, mappingDiff(op.Mapping, id.Mapping, id.ReadAs))
	}
	return strings.Join(parts, " and "), strings.Join(details, "; ")
}

// ShortDigest shortens a digest (sha256:…) to its algorithm and first 12
// hex digits, as messages show it.
func ShortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// mappingDiff compares two canonical mapping documents field by field. A
// column type that one of them names and the other does not, and that
// readAs gives the column anyway, changes nothing and is left out.
func mappingDiff(was, now string, readAs map[string]string) string {
	var a, b map[string]any
	if json.Unmarshal([]byte(was), &a) != nil || json.Unmarshal([]byte(now), &b) != nil {
		return "stored mapping cannot be compared"
	}
	ca, _ := a["columns"].(map[string]any)
	cb, _ := b["columns"].(map[string]any)
	for _, c := range [][2]map[string]any{{ca, cb}, {cb, ca}} {
		for name, t := range c[0] {
			if _, other := c[1][name]; !other && t == any(readAs[name]) {
				delete(c[0], name)
			}
		}
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []string
	for _, k := range names {
		x, _ := json.Marshal(a[k])
		y, _ := json.Marshal(b[k])
		if string(x) != string(y) {
			out = append(out, fmt.Sprintf("%s was %s, now %s", k, render(a[k]), render(b[k])))
		}
	}
	if len(out) == 0 {
		return "mapping versions differ"
	}
	return strings.Join(out, ", ")
}

func render(v any) string {
	if v == nil {
		return "unset"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
