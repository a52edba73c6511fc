package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemport/idemport/internal/english"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
	"github.com/idemport/idemport/reader/remote"
)

// undoOptions are the flags of undo.
type undoOptions struct {
	into          target
	output, table string
	forget        bool
	busyTimeout   time.Duration
	nf            notifyFlags
}

func newUndoCmd(e *env) *cobra.Command {
	o := &undoOptions{}
	c := &cobra.Command{
		Use:   "undo [flags] FILE|FILE-ID",
		Short: "Retract an import: remove its rows and forget it, so the file can be imported again",
		Long: `Undo retracts the import of FILE (a path, matched by its content) or FILE-ID. For an import
keyed by row (no --key), it deletes the rows the file wrote and its quarantined rows, releases
any claims on its partitions, and marks it undone, in one transaction: the next import of the
file starts over as a new operation. For an import by --key, other files may since have
written the same keys, so undo refuses (exit 2) unless --forget, which keeps the rows and only
forgets the import. Undoing an import that is already undone changes nothing. The undo is
recorded in the file's history as an attempt with trigger "undo".

Undoing a --snapshot import withdraws the snapshot: the one applied before it to the same table
and scope is current again, for staleness and --reapply, and undo names it. Without --key, the
undo of the latest soft snapshot also clears the marks its sweep set; rows a hard sweep deleted,
and by --key the rows as the undone file left them, are restored by importing the current
snapshot's file again with --reapply, as undo says.`,
		Example: `  idemport undo orders.csv
  idemport undo --table orders sha256:9fce7cbabe9b…
  idemport undo --forget --table customers customers-2026-11-28.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runUndo(c, e, o, args[0]) },
	}
	e.intoFlag(c, &o.into)
	outputFlag(c, &o.output)
	c.Flags().StringVar(&o.table, "table", "", "the table the file was imported into, when it went to several")
	c.Flags().BoolVar(&o.forget, "forget", false, "keep the rows and only forget the import (required for imports by --key)")
	c.Flags().Var(newDurationFlag(&o.busyTimeout, 30*time.Second), "busy-timeout", "how long to wait for a lock an import holds (SQLite's write lock, a PostgreSQL row or table lock) before exiting busy (4)")
	o.nf.register(c)
	feedFlag(c)
	return c
}

// runUndo undoes the import of fileOrID and prints what it did.
func runUndo(c *cobra.Command, e *env, o *undoOptions, fileOrID string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	op, err := existingOperator(c, o.into)
	if err != nil {
		return err
	}
	op.Close()
	sinks, err := o.nf.sinks(e)
	if err != nil {
		return err
	}
	defer closeSinks(sinks)
	// Undo writes: open the target for writing once it is known to exist.
	op, err = o.into.operator(c.Context(), pipeline.Options{Notify: sinks, Failpoints: e.failpoints, BusyTimeout: o.busyTimeout})
	if err != nil {
		return err
	}
	defer op.Close()
	res, err := op.Undo(c.Context(), ops.UndoRequest{FileOrID: fileOrID, Table: o.table, Forget: o.forget})
	if err != nil {
		return err
	}
	if len(sinks) > 0 {
		defer reportDelivery(e, deliverAfter(c.Context(), e, op, o.nf.timeout))
	}
	if o.output == "json" {
		return writeJSON(e.stdout, res)
	}
	return undoText(e, fileOrID, res)
}

// undoText prints what the undo of fileOrID did.
func undoText(e *env, fileOrID string, res *ops.UndoResult) error {
	var err error
	switch {
	case res.Already:
		_, err = textf(e.stdout, "%s: already undone; nothing to do\n", remote.Redact(fileOrID))
	case res.Forgot:
		_, err = textf(e.stdout, "%s: forgot the import into %s (was %s); its rows are kept, and the file can be imported again\n", remote.Redact(fileOrID), res.Table, res.Previous)
	default:
		_, err = textf(e.stdout, "%s: undone: removed %s from %s (was %s); the file can be imported again\n", remote.Redact(fileOrID), english.Plural(res.Deleted, "row"), res.Table, res.Previous)
	}
	if err == nil && len(res.Dropped) > 0 {
		_, err = textf(e.stdout, "  dropped: %s\n", strings.Join(res.Dropped, ", "))
	}
	if err == nil && res.Snapshot != nil {
		_, err = textf(e.stdout, "  snapshot: %s\n", undoSnapshotText(res))
	}
	return err
}

// undoSnapshotText says which snapshot of its table and scope is current
// after the undo of a snapshot import, what the undo brought back, and how
// to restore the table to the current snapshot's extract when it could not.
func undoSnapshotText(res *ops.UndoResult) string {
	s := res.Snapshot
	where := res.Table
	if s.Scope != "" {
		where += " scope " + s.Scope
	}
	var back string
	if s.Unmarked > 0 {
		back = fmt.Sprintf("%s its sweep marked deleted %s live again; ", english.Plural(s.Unmarked, "row"), english.Verb(s.Unmarked, "is", "are"))
	}
	if s.Current == nil {
		return back + fmt.Sprintf("no earlier snapshot of %s is applied: the next snapshot applies, whatever its date", where)
	}
	cur := fmt.Sprintf("the snapshot as of %s (%s, file ID %s)", s.Current.AsOf.Format(time.RFC3339), s.Current.Path, s.Current.FileID)
	reapply := fmt.Sprintf("import it again with --reapply and its other flags (idemport import --reapply … %s)", s.Current.Path)
	switch {
	case res.Already:
		return fmt.Sprintf("%s is current for %s; if %s should hold exactly that extract, %s", cur, where, res.Table, reapply)
	case !s.WasCurrent:
		return fmt.Sprintf("it was not the latest applied: %s stays current for %s", cur, where)
	case s.Restore && res.Forgot:
		return fmt.Sprintf("%s is current again for %s; the rows were kept as this snapshot left them (its values, and what its sweep deleted or marked): to restore %s to that extract, %s", cur, where, res.Table, reapply)
	case s.Restore:
		return fmt.Sprintf("%s is current again for %s; the rows this snapshot's sweep deleted are not brought back by undo: to restore %s to that extract, %s", cur, where, res.Table, reapply)
	default:
		return back + cur + " is current again for " + where
	}
}
