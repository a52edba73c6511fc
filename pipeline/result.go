package pipeline

import (
	"encoding/json"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
)

// Outcome is what an import run did with one file.
type Outcome string

// The outcomes, from the claim decision table.
const (
	Imported  Outcome = "imported"  // a new operation, completed by this run
	Resumed   Outcome = "resumed"   // an existing operation, continued to completion
	Duplicate Outcome = "duplicate" // already completed with the same fingerprint: no effect
	Conflict  Outcome = "conflict"  // the fingerprint differs from the stored one: no effect
	Busy      Outcome = "busy"      // another live attempt holds the work
	Refused   Outcome = "refused"   // too many bad rows: nothing written to the target
	Failed    Outcome = "failed"    // a runtime failure; a rerun resumes
	Skipped   Outcome = "skipped"   // modified too recently (--min-age): not read, nothing written
	Stale     Outcome = "stale"     // a snapshot older than the last one applied: nothing written
	// Interrupted: cancelled (SIGINT, SIGTERM) before it finished; what it
	// committed stays, and a rerun resumes. History records the same word.
	Interrupted Outcome = "interrupted"
)

// Result reports one file's import. Err is set for Failed, Conflict, Busy
// and Refused, and says why in words. A file that failed for its own
// reason before it reached idemport's tables, on a fresh state that could
// not be created, fails with both: Err joins the file's error and the
// state's (errors.Join, the file's first).
type Result struct {
	File          string              `json:"file"`
	FileID        string              `json:"file_id"`
	ContentDigest string              `json:"content_digest"`
	MappingDigest string              `json:"mapping_digest,omitempty"`
	Table         string              `json:"table"`
	AttemptID     string              `json:"attempt_id,omitempty"` // empty when the decision ran no attempt
	Outcome       Outcome             `json:"outcome"`
	Rows          idemtype.Rows       `json:"rows"`
	Partitions    idemtype.Partitions `json:"partitions"`
	// Deleted is how many rows a snapshot sweep deleted (or marked deleted
	// with --delete soft).
	Deleted int64 `json:"deleted"`
	// ColumnsAdded and ColumnsWidened name the columns --evolve added to
	// the table or widened to text.
	ColumnsAdded   []string `json:"columns_added,omitempty"`
	ColumnsWidened []string `json:"columns_widened,omitempty"`
	// RecoveredLease is true when this run took over the expired lease of a
	// dead or stalled attempt; RecoveredFrom names those attempts, each
	// once, and RecoveredLeases counts the leases taken over (an
	// operation's planning lease and each partition's).
	RecoveredLease  bool  `json:"recovered_lease"`
	RecoveredLeases int64 `json:"recovered_leases"`
	// QuickCheck is true when the content digest came from the quick check
	// (the file was unchanged since it was last hashed) instead of hashing.
	QuickCheck bool `json:"quick_check"`
	// Read is what the run read of the file to plan and apply it, besides
	// hashing it: a resumed run reads only its unfinished partitions where
	// the format can seek.
	Read          reader.Stats `json:"read"`
	RecoveredFrom []string     `json:"recovered_from,omitempty"`
	// EventID is the event this run recorded in the outbox (the operation
	// completed), empty when it recorded none.
	EventID string `json:"event_id,omitempty"`
	// Notified says how far that event is delivered to the --notify sinks:
	// delivered, pending or failed; empty without sinks or event.
	Notified string `json:"notified,omitempty"`
	// Replaces is the content digest of the earlier version of the file
	// ID that the operation replaces (--replace); empty otherwise.
	Replaces string `json:"replaces,omitempty"`
	// Removed is how many rows of that earlier version this run removed:
	// its rows (ordinal mode), or its keys the new version lacks (by key).
	// Of an import abandoned because its file changed under it, it is how
	// many rows the operation had committed that the abandonment removed
	// (ordinal mode; by key they stay): of this run's, counted as inserted,
	// and of the attempts before it.
	Removed  int64         `json:"removed,omitempty"`
	Duration time.Duration `json:"-"`
	Err      error         `json:"-"`

	// Previous is the stored outcome of the operation this run found
	// completed (duplicate), refused earlier or in conflict: what an
	// earlier attempt did. Rows is what this run did: zero for those.
	Previous *Previous `json:"previous,omitempty"`

	// Stored is the stored operation, for duplicate, conflict and refused
	// outcomes: when and by which attempt it was completed or refused.
	Stored *ledger.Operation `json:"-"`
	// Differs says, for a conflict, what differs from the stored
	// operation: "content", "mapping" or "content and mapping".
	Differs string `json:"differs,omitempty"`
	// Refusal lists the first bad rows of a refused file.
	Refusal *Refusal `json:"refusal,omitempty"`
	// Notes says in words what the run decided that a user would not
	// expect from the outcome alone: that it superseded a refused
	// operation, or imported a completed file again because its table was
	// missing.
	Notes []string `json:"notes,omitempty"`
}

// Refusal is the stored report of a refused file.
type Refusal struct {
	Rows       int64           `json:"rows"`
	Rejected   int64           `json:"rejected"`
	MaxRejects RejectLimit     `json:"max_rejects"`
	Error      string          `json:"error,omitempty"` // a defect that stopped the plan pass
	Rejects    []reader.Reject `json:"first_bad_rows,omitempty"`
	// NotUTF8 says most bad rows are text that is not UTF-8 in a file
	// read as UTF-8: the file is most likely in another encoding.
	NotUTF8 bool `json:"not_utf8,omitempty"`
	// Widen names the existing table's numeric columns that bad rows do
	// not fit by type and that --evolve widen would widen to take them.
	Widen []string `json:"widen,omitempty"`
	// Unfit says the file was refused because its table did not fit it
	// (Error says how): the table's fault, not the file's, so a rerun
	// plans the file again against the table as it is then.
	Unfit bool `json:"unfit,omitempty"`
}

// storedOutcome is what finalize stores and a duplicate run returns.
type storedOutcome struct {
	Rows          idemtype.Rows `json:"rows"`
	Partitions    int64         `json:"partitions"`
	ContentDigest string        `json:"content_digest"`
	CompletedBy   string        `json:"completed_by"`
	Attempts      int64         `json:"attempts"`
	DurationMs    int64         `json:"duration_ms"`       // from the operation's creation to its completion
	Deleted       int64         `json:"deleted,omitempty"` // rows a snapshot sweep removed
}

// Previous is what an earlier run did with the operation a run found
// already settled.
type Previous struct {
	State     string        `json:"state"`                // completed or refused
	AttemptID string        `json:"attempt_id,omitempty"` // the attempt that completed it
	At        string        `json:"at"`                   // when it was completed or refused, RFC 3339
	Rows      idemtype.Rows `json:"rows"`                 // its stored row counts
}

// RefusedRows returns the bad rows the refusal of op recorded (the first
// of them: a refusal keeps only those, since nothing was quarantined), or
// nil when op is not refused or recorded none.
func RefusedRows(op ledger.Operation) []ledger.Reject {
	var ref Refusal
	if op.State != ledger.Refused || json.Unmarshal([]byte(op.Outcome), &ref) != nil {
		return nil
	}
	out := make([]ledger.Reject, 0, len(ref.Rejects))
	for _, b := range ref.Rejects {
		out = append(out, ledger.Reject{Reject: b})
	}
	return out
}
