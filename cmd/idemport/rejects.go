package main

import (
	"errors"
	"fmt"
	"github.com/idemport/idemport/internal/english"
	"io"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
)

func newRejectsCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "rejects",
		Short: "List, export and replay the bad rows quarantined by imports",
		Long: `Bad rows within --max-rejects are kept in the rejects quarantine with their original identity
(file ID and row ordinal), byte offset, column, value and reason. Export them as CSV, fix the
values, and replay the fixed file: each row is applied under its original identity, as a new
attempt with trigger "replay". Replaying the same file again changes nothing.`,
		Example: `  idemport rejects list orders.csv
  idemport rejects export orders.csv > fix.csv    # edit fix.csv
  idemport rejects replay fix.csv`,
	}
	c.AddCommand(newRejectsListCmd(e), newRejectsExportCmd(e), newRejectsReplayCmd(e))
	return c
}

// rejectsOf finds the operations of a file (path or file ID) and their rejects.
func rejectsOf(c *cobra.Command, into target, fileOrID, table string) (*ops.Operator, []ledger.Operation, [][]ledger.Reject, error) {
	eng, err := existingOperator(c, into)
	if err != nil {
		return nil, nil, nil, err
	}
	ops, err := eng.Operations(c.Context(), fileOrID, table)
	if err != nil {
		eng.Close()
		return nil, nil, nil, err
	}
	var all [][]ledger.Reject
	for _, op := range ops {
		rs, err := eng.Rejects(c.Context(), op.Key)
		if err != nil {
			eng.Close()
			return nil, nil, nil, err
		}
		if len(rs) == 0 {
			rs = pipeline.RefusedRows(op) // a refused file quarantined nothing: its report names its first bad rows
		}
		all = append(all, rs)
	}
	return eng, ops, all, nil
}

func newRejectsListCmd(e *env) *cobra.Command {
	var into target
	var output, table string
	c := &cobra.Command{
		Use:     "list FILE|FILE-ID",
		Short:   "List the quarantined rows of a file's imports",
		Example: "  idemport rejects list orders.csv\n  idemport rejects list orders/2026-11-28 --table orders --output json",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			eng, ops, all, err := rejectsOf(c, into, args[0], table)
			if err != nil {
				return err
			}
			defer eng.Close()
			if output == "json" {
				return rejectsJSON(e.stdout, ops, all)
			}
			return rejectsText(e.stdout, ops, all)
		},
	}
	e.intoFlag(c, &into)
	outputFlag(c, &output)
	c.Flags().StringVar(&table, "table", "", "only the operation on this table")
	feedFlag(c)
	return c
}

// rejectsJSON writes the rejects all of ops, all[i] those of ops[i], as
// JSON lines.
func rejectsJSON(w io.Writer, ops []ledger.Operation, all [][]ledger.Reject) error {
	type rejectJSON struct {
		Table      string `json:"table"`
		FileID     string `json:"file_id"`
		Ordinal    int64  `json:"ordinal"`
		Offset     int64  `json:"byte_offset"`
		Column     string `json:"column,omitempty"`
		Value      string `json:"value"`
		Code       string `json:"code"`
		Message    string `json:"message"`
		AttemptID  string `json:"attempt_id"`
		ReplayedBy string `json:"replayed_by,omitempty"`
	}
	out := []rejectJSON{}
	for i, op := range ops {
		for _, r := range all[i] {
			out = append(out, rejectJSON{op.Table, op.FileID, r.Ordinal, r.Offset, r.Column, r.Value, r.Code, r.Message, r.Attempt, r.ReplayedBy})
		}
	}
	return writeJSON(w, out...)
}

func rejectsText(w io.Writer, ops []ledger.Operation, all [][]ledger.Reject) error {
	for i, op := range ops {
		if op.State == ledger.Refused {
			textf(w, "%s ← %s: refused: %s of %s, more than --max-rejects allows; nothing was written. The first bad rows:\n",
				op.Table, op.FileID, english.Plural(op.Rows.Rejected, "bad row"), english.Plural(op.Rows.Read, "row"))
		} else {
			textf(w, "%s ← %s: %s\n", op.Table, op.FileID, english.Plural(len(all[i]), "rejected row"))
		}
		if len(all[i]) == 0 {
			continue
		}
		err := writeTable(w, "", "ROW\tBYTE\tCOLUMN\tVALUE\tCODE\tREASON\tREPLAYED BY", all[i], func(r ledger.Reject) []any {
			offset := "-"
			if r.Offset >= 0 {
				offset = fmt.Sprint(r.Offset)
			}
			column, value := "-", "-" // a row-wide defect (a field count, a line that is not JSON) has no value
			if r.Column != "" {
				column, value = r.Column, fmt.Sprintf("%q", clip(r.Value, 40))
			}
			return []any{r.Ordinal, offset, column, value, r.Code, r.Message, orDash(r.ReplayedBy)}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func newRejectsExportCmd(e *env) *cobra.Command {
	var into target
	var table string
	var all bool
	c := &cobra.Command{
		Use:   "export FILE|FILE-ID",
		Short: "Write a file's quarantined rows as CSV, ready to fix and replay",
		Long: `Export writes the quarantined rows of one operation as CSV on stdout: the identity columns
_idemport_table, _idemport_file_id and _idemport_row (the row's ordinal in its source file),
then the source file's columns with the values as they were read: a null is an empty unquoted
field, an empty string is "", a json column holds its JSON document. Fields a row had beyond
its file's columns follow in _idemport_extra_1, _idemport_extra_2, ...: move their values into
the columns and leave them empty. Fix the values and give the file to 'idemport rejects
replay'. Rows already replayed are left out unless --all.`,
		Example: "  idemport rejects export orders.csv > fix.csv",
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			eng, err := existingOperator(c, into)
			if err != nil {
				return err
			}
			defer eng.Close()
			return eng.ExportRejects(c.Context(), e.stdout, args[0], table, all)
		},
	}
	e.intoFlag(c, &into)
	c.Flags().StringVar(&table, "table", "", "the operation on this table (needed when the file went to several)")
	c.Flags().BoolVar(&all, "all", false, "include rows already replayed")
	feedFlag(c)
	return c
}

// replayOptions are the flags of rejects replay.
type replayOptions struct {
	into   target
	output string
	nf     notifyFlags
}

func newRejectsReplayCmd(e *env) *cobra.Command {
	o := &replayOptions{}
	c := &cobra.Command{
		Use:   "replay FIXED.csv",
		Short: "Apply corrected rejects under their original identity",
		Long: `Replay applies the rows of a corrected export to the target of the import they came from,
each under its original identity (file ID and row ordinal), as a new attempt with trigger
"replay". Every row must be one of the operation's quarantined rows and must now be valid;
otherwise nothing is applied (exit 5). Replaying the same file again changes nothing.`,
		Example: "  idemport rejects replay fix.csv",
		Args:    cobra.ExactArgs(1),
		RunE:    func(c *cobra.Command, args []string) error { return runReplay(c, e, o, args[0]) },
	}
	e.intoFlag(c, &o.into)
	outputFlag(c, &o.output)
	o.nf.register(c)
	feedFlag(c)
	return c
}

// runReplay replays the corrected rejects in path and prints what it did;
// a file it refuses is a refusedError.
func runReplay(c *cobra.Command, e *env, o *replayOptions, path string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	sinks, err := o.nf.sinks(e)
	if err != nil {
		return err
	}
	defer closeSinks(sinks)
	op, err := o.into.operator(c.Context(), pipeline.Options{Notify: sinks, Failpoints: e.failpoints})
	if err != nil {
		return err
	}
	defer op.Close()
	res, err := op.Replay(c.Context(), path)
	if err != nil {
		if errors.Is(err, ops.ErrReplay) {
			return refusedError{err}
		}
		return err
	}
	if len(sinks) > 0 {
		defer reportDelivery(e, deliverAfter(c.Context(), e, op, o.nf.timeout))
	}
	if o.output == "json" {
		return writeJSON(e.stdout, res)
	}
	_, err = textf(e.stdout, "%s: replayed %s into %s under their identity in %s (%d inserted, %d updated, %d unchanged, %d stale)\n",
		res.File, english.Plural(res.Rows.Read, "row"), res.Table, res.FileID, res.Rows.Inserted, res.Rows.Updated, res.Rows.Unchanged, res.Rows.Stale)
	return err
}

// refusedError is a command refused for its input, with nothing applied
// (exit 5).
type refusedError struct{ error }

func (e refusedError) Unwrap() error { return e.error }
