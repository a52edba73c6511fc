package main

import (
	"errors"
	"fmt"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
)

// existingOperator opens the target for an operator's command that reads
// what imports left there. A SQLite file that does not exist is an error
// (exit 1), not an empty ledger: --into most likely names the wrong file,
// and reading must not create it.
func existingOperator(c *cobra.Command, into target) (*ops.Operator, error) {
	op, err := into.operator(c.Context(), pipeline.Options{ReadOnly: true})
	return op, noDatabase(into, err)
}

// noDatabase says what a missing database means to a command that reads
// what imports left there; other errors are returned as they are.
func noDatabase(into target, err error) error {
	if errors.Is(err, pipeline.ErrNoDatabase) {
		return fmt.Errorf("%s does not exist: nothing was imported there (check --into, or $IDEMPORT_INTO)", into)
	}
	return err
}

// openReadOnly opens the target for a command that only reads. A missing
// SQLite file is an empty ledger: an Engine without a database, which
// creates none.
func openReadOnly(c *cobra.Command, into target) (*pipeline.Engine, error) {
	return into.open(c.Context(), pipeline.Options{ReadOnly: true, AllowMissing: true})
}

func newStatusCmd(e *env) *cobra.Command {
	var into target
	var output, table, state string
	c := &cobra.Command{
		Use:   "status",
		Short: "List operations: state, rows, partitions done, attempts, leases",
		Example: `  idemport status
  idemport status --state failed --table orders
  idemport status --output json | jq -c 'select(.state != "completed")'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return runStatus(c, e, into, output, table, state) },
	}
	e.intoFlag(c, &into)
	outputFlag(c, &output)
	c.Flags().StringVar(&table, "table", "", "only operations on this table")
	c.Flags().StringVar(&state, "state", "", "only operations in this state: processing, failed, completed, refused, undone or abandoned (default: all but undone)")
	feedFlag(c)
	return c
}

// runStatus lists the operations on table in state (any, when empty).
func runStatus(c *cobra.Command, e *env, into target, output, table, state string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	switch ledger.State(state) {
	case "", ledger.Processing, ledger.Failed, ledger.Completed, ledger.Refused, ledger.Undone, ledger.Abandoned:
	default:
		return usageError{fmt.Errorf("--state %q: want processing, failed, completed, refused, undone or abandoned", state)}
	}
	eng, err := existingOperator(c, into)
	if err != nil {
		return err
	}
	defer eng.Close()
	ops, err := eng.Status(c.Context(), ledger.Filter{Table: table, State: ledger.State(state)})
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(e.stdout, statusJSON(ops)...)
	}
	return statusText(e.stdout, ops)
}

type operationJSON struct {
	Table         string        `json:"table"`
	FileID        string        `json:"file_id"`
	State         string        `json:"state"`
	ContentDigest string        `json:"content_digest"`
	MappingDigest string        `json:"mapping_digest"`
	File          string        `json:"file"`
	Rows          idemtype.Rows `json:"rows"`
	Partitions    struct {
		Total int64 `json:"total"`
		Done  int64 `json:"done"`
	} `json:"partitions"`
	Attempts    int64       `json:"attempts"`
	LeasedBy    []string    `json:"leased_by,omitempty"`
	Leases      []ops.Lease `json:"leases,omitempty"`
	CreatedAt   string      `json:"created_at"`
	UpdatedAt   string      `json:"updated_at"`
	CompletedAt string      `json:"completed_at,omitempty"`
	CompletedBy string      `json:"completed_by,omitempty"`
	// Replaces is the content digest of the version this operation
	// replaced (--replace); ReplacedBy, of a replaced one, the content
	// digest of the version that replaced it.
	Replaces   string `json:"replaces,omitempty"`
	ReplacedBy string `json:"replaced_by,omitempty"`
}

func statusJSON(ops []ops.OperationStatus) []operationJSON {
	out := make([]operationJSON, 0, len(ops))
	for _, o := range ops {
		j := operationJSON{Table: o.Table, FileID: o.FileID, State: string(o.State), ContentDigest: o.ContentDigest,
			MappingDigest: o.MappingDigest, File: o.Path, Rows: o.Rows, Attempts: o.Attempts, LeasedBy: o.Holders, Leases: o.Leases,
			CreatedAt: jsonTime(o.CreatedAt), UpdatedAt: jsonTime(o.UpdatedAt), CompletedAt: jsonTime(o.CompletedAt), CompletedBy: o.CompletedBy,
			Replaces: o.Replaces, ReplacedBy: o.ReplacedBy}
		if !o.Planned && o.LeaseAttempt != "" {
			j.LeasedBy = append(j.LeasedBy, o.LeaseAttempt)
		}
		j.Partitions.Total, j.Partitions.Done = o.Partitions.Total, o.Partitions.Done
		out = append(out, j)
	}
	return out
}

func statusText(w io.Writer, list []ops.OperationStatus) error {
	return writeTable(w, "no operations", "TABLE\tFILE\tFILE ID\tSTATE\tROWS\tPARTITIONS\tATTEMPTS\tLEASE\tUPDATED", list, func(o ops.OperationStatus) []any {
		state := string(o.State)
		switch o.Holding() {
		case pipeline.HolderStopped:
			state = "stopped"
		case pipeline.HolderGone:
			state = holderText(pipeline.HolderGone)
		}
		if replacing(o) {
			state += ", replacing content " + ledger.ShortDigest(o.Replaces)
		}
		var leases []string
		for _, l := range o.Leases {
			lease := fmt.Sprintf("%s:%d", l.Host, l.PID)
			var notes []string
			if l.Planning {
				notes = append(notes, "planning")
			}
			if l.State != pipeline.HolderRunning {
				notes = append(notes, l.State)
			}
			if len(notes) > 0 {
				lease += " (" + strings.Join(notes, ", ") + ")"
			}
			leases = append(leases, lease)
		}
		lease := strings.Join(leases, ", ")
		rows := fmt.Sprint(o.Rows.Inserted + o.Rows.Updated + o.Rows.Unchanged + o.Rows.Stale + o.Rows.Superseded)
		if o.Rows.Rejected > 0 {
			rows += fmt.Sprintf(" (+%d bad)", o.Rows.Rejected)
		}
		return []any{o.Table, o.Path, shortID(o.FileID), state, rows, fmt.Sprintf("%d/%d", o.Partitions.Done, o.Partitions.Total),
			o.Attempts, orDash(lease), msTime(o.UpdatedAt)}
	})
}

// replacing reports whether o is a replacement (--replace) that has not
// finished: processing, failed, or refused (a version corrected again
// supersedes it and finishes the replacement). The version it replaces is
// among the past operations already, which status does not list, so its
// line says which it is. A completed replacement shows as completed;
// history says what it replaced.
func replacing(o ops.OperationStatus) bool {
	if o.Replaces == "" {
		return false
	}
	switch o.State {
	case ledger.Processing, ledger.Failed, ledger.Refused:
		return true
	}
	return false
}

// holderText is how text output shows the state of an attempt that
// recorded no end: a gone one says what happens next.
func holderText(state string) string {
	if state == pipeline.HolderGone {
		return "gone (a rerun takes over)"
	}
	return state
}

// shortID shortens content digests used as file IDs for tables.
func shortID(id string) string {
	if strings.HasPrefix(id, "sha256:") && len(id) > 19 {
		return id[:19] + "…"
	}
	return id
}

func newHistoryCmd(e *env) *cobra.Command {
	var into target
	var output, table string
	c := &cobra.Command{
		Use:   "history FILE|FILE-ID",
		Short: "Show the attempts of a file's operations",
		Long: `Show every attempt on the operations of a file, given as a path to the file (matched by its
content digest), as a file ID, as any path an import has seen it under (found even after the
file was moved away), or as the start of a file ID that only one file ID has.`,
		Example: `  idemport history orders.csv
  idemport history drop/orders-2026-11-26.csv     # moved to the archive since
  idemport history sha256:9fce7cbabe9b
  idemport history orders/2026-11-28 --table orders --output json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runHistory(c, e, into, output, table, args[0]) },
	}
	e.intoFlag(c, &into)
	outputFlag(c, &output)
	c.Flags().StringVar(&table, "table", "", "only the operation on this table")
	feedFlag(c)
	return c
}

// runHistory shows the attempts of the operations of fileOrID.
func runHistory(c *cobra.Command, e *env, into target, output, table, fileOrID string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	eng, err := existingOperator(c, into)
	if err != nil {
		return err
	}
	defer eng.Close()
	ops, attempts, err := eng.History(c.Context(), fileOrID, table)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(e.stdout, historyJSON(ops, attempts)...)
	}
	return historyText(e.stdout, ops, attempts)
}

type attemptJSON struct {
	AttemptID     string        `json:"attempt_id"`
	Trigger       string        `json:"trigger"`
	Host          string        `json:"host"`
	PID           int           `json:"pid"`
	File          string        `json:"file"`
	StartedAt     string        `json:"started_at"`
	EndedAt       string        `json:"ended_at,omitempty"`
	Outcome       string        `json:"outcome"`
	RecoveredFrom string        `json:"recovered_from,omitempty"`
	Rows          idemtype.Rows `json:"rows"`
	Partitions    struct {
		Skipped   int64 `json:"skipped"`
		Committed int64 `json:"committed"`
	} `json:"partitions"`
	RecoveredLeases int64  `json:"recovered_leases"`
	Deleted         int64  `json:"deleted"`
	SchemaChanges   string `json:"schema_changes,omitempty"`
	Error           string `json:"error,omitempty"`
}

type historyEntry struct {
	operationJSON
	History []attemptJSON `json:"attempts_detail"`
}

func historyJSON(list []ops.OperationStatus, attempts [][]ledger.AttemptRecord) []historyEntry {
	out := make([]historyEntry, len(list))
	for i, op := range list {
		out[i].operationJSON = statusJSON([]ops.OperationStatus{op})[0]
		for _, a := range attempts[i] {
			j := attemptJSON{AttemptID: a.ID, Trigger: a.Trigger, Host: a.Host, PID: a.PID, File: a.Path,
				StartedAt: jsonTime(a.StartedAt), EndedAt: jsonTime(a.EndedAt), Outcome: ops.AttemptOutcome(a, op), RecoveredFrom: a.RecoveredFrom,
				Rows: a.Rows, RecoveredLeases: a.Recovered, Deleted: a.Deleted, SchemaChanges: a.SchemaChanges, Error: a.Error}
			j.Partitions.Skipped, j.Partitions.Committed = a.Partitions.Skipped, a.Partitions.Committed
			out[i].History = append(out[i].History, j)
		}
	}
	return out
}

func historyText(w io.Writer, list []ops.OperationStatus, attempts [][]ledger.AttemptRecord) error {
	for i, op := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		state := string(op.State)
		if op.ReplacedBy != "" {
			state += " by content " + ledger.ShortDigest(op.ReplacedBy)
		} else if op.Replaces != "" {
			state += ", replacing content " + ledger.ShortDigest(op.Replaces)
		}
		textf(w, "%s ← %s: %s, %s, last seen as %s, content %s\n", op.Table, op.FileID, state,
			english.Plural(len(attempts[i]), "attempt"), op.Path, op.ContentDigest)
		err := writeTable(w, "", "ATTEMPT\tTRIGGER\tHOST:PID\tSTARTED\tOUTCOME\tINSERTED\tUPDATED\tUNCHANGED\tSTALE\tSUPERSEDED\tREJECTED\tPARTITIONS\tNOTE", attempts[i], func(a ledger.AttemptRecord) []any {
			note := a.Error
			if a.RecoveredFrom != "" {
				note = strings.TrimSpace("recovered lease of " + a.RecoveredFrom + "; " + note)
				note = strings.TrimSuffix(note, ";")
			}
			if a.Deleted > 0 {
				note = strings.TrimSuffix(fmt.Sprintf("snapshot swept %s; %s", english.Plural(a.Deleted, "row"), note), "; ")
			}
			if a.SchemaChanges != "" {
				note = strings.TrimSuffix("schema: "+a.SchemaChanges+"; "+note, "; ")
			}
			return []any{a.ID, a.Trigger, fmt.Sprintf("%s:%d", a.Host, a.PID), msTime(a.StartedAt), holderText(ops.AttemptOutcome(a, op)),
				a.Rows.Inserted, a.Rows.Updated, a.Rows.Unchanged, a.Rows.Stale, a.Rows.Superseded, a.Rows.Rejected,
				fmt.Sprintf("%d committed, %d skipped", a.Partitions.Committed, a.Partitions.Skipped), note}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
