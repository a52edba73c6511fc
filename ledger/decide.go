package ledger

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Decision is what a run does with an operation, per the claim decision
// table.
type Decision int

// The decisions.
const (
	// Create: no operation exists; create it and plan.
	Create Decision = iota
	// Plan: the operation exists without a stored plan and nobody live holds
	// the planning lease; take the lease and plan.
	Plan
	// Resume: the plan is stored; claim unfinished partitions.
	Resume
	// Duplicate: already completed with the same fingerprint; no effect.
	Duplicate
	// Refuse: already refused with the same fingerprint; refuse again from
	// the stored report.
	Refuse
	// Conflict: the fingerprint differs from the stored one; no effect.
	Conflict
	// Busy: another live attempt holds the planning lease.
	Busy
)

var decisionNames = [...]string{"create", "plan", "resume", "duplicate", "refuse", "conflict", "busy"}

func (d Decision) String() string { return decisionNames[d] }

// Decide applies the claim decision table to the stored operation op (nil
// when none) for a run with identity id at time now (Unix ms, database
// clock). It also returns the attempt whose expired planning lease the run
// takes over, if any. It does not look at partition leases: for Resume the
// caller claims partitions and is busy if none is free.
func Decide(op *Operation, id Identity, now int64) (Decision, string) {
	if op == nil {
		return Create, ""
	}
	if op.ContentDigest != id.ContentDigest || op.MappingDigest != id.MappingDigest {
		return Conflict, ""
	}
	switch op.State {
	case Completed:
		return Duplicate, ""
	case Refused:
		return Refuse, ""
	case Failed:
		if op.Planned {
			return Resume, ""
		}
		return Plan, ""
	}
	if op.Planned {
		return Resume, ""
	}
	if op.LeaseAttempt != "" && op.LeaseExpires > now {
		return Busy, ""
	}
	return Plan, op.LeaseAttempt
}

// Difference says in words how id differs from the stored operation op:
// what differs ("content", "mapping" or "content and mapping") and how.
func Difference(op *Operation, id Identity) (what, how string) {
	var parts, details []string
	if op.ContentDigest != id.ContentDigest {
		parts = append(parts, "content")
		details = append(details, fmt.Sprintf("stored %s, this file %s", short(op.ContentDigest), short(id.ContentDigest)))
	}
	if op.MappingDigest != id.MappingDigest {
		parts = append(parts, "mapping")
		details = append(details, mappingDiff(op.Mapping, id.Mapping))
	}
	return strings.Join(parts, " and "), strings.Join(details, "; ")
}

func short(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// mappingDiff compares two canonical mapping documents field by field.
func mappingDiff(was, now string) string {
	var a, b map[string]any
	if json.Unmarshal([]byte(was), &a) != nil || json.Unmarshal([]byte(now), &b) != nil {
		return "stored mapping cannot be compared"
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
