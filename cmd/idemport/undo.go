package main

import (
	"fmt"
	"github.com/idemport/idemport/internal/english"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/pipeline"
)

func newUndoCmd(e *env) *cobra.Command {
	var into target
	var output, table string
	var forget bool
	var nf notifyFlags
	c := &cobra.Command{
		Use:   "undo [flags] FILE|FILE-ID",
		Short: "Retract an import: remove its rows and forget it, so the file can be imported again",
		Long: `Undo retracts the import of FILE (a path, matched by its content) or FILE-ID. For an import
keyed by row (no --key), it deletes the rows the file wrote and its quarantined rows, releases
any claims on its partitions, and marks it undone, in one transaction: the next import of the
file starts over as a new operation. For an import by --key, other files may since have
written the same keys, so undo refuses (exit 2) unless --forget, which keeps the rows and only
forgets the import. Undoing an import that is already undone changes nothing. The undo is
recorded in the file's history as an attempt with trigger "undo".`,
		Example: `  idemport undo orders.csv
  idemport undo --table orders sha256:9fce7cbabe9b…
  idemport undo --forget --table customers customers-2026-11-28.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			eng, err := openExisting(c, into)
			if err != nil {
				return err
			}
			eng.Close()
			sinks, err := nf.sinks(e)
			if err != nil {
				return err
			}
			defer closeSinks(sinks)
			// Undo writes: open the target for writing once it is known to exist.
			eng, err = into.open(c.Context(), pipeline.Options{Notify: sinks, Failpoints: e.failpoints})
			if err != nil {
				return err
			}
			defer eng.Close()
			res, err := eng.Undo(c.Context(), pipeline.UndoRequest{FileOrID: args[0], Table: table, Forget: forget})
			if err != nil {
				return err
			}
			if len(sinks) > 0 {
				defer reportDelivery(e, deliverAfter(c.Context(), e, eng, nf.timeout))
			}
			if output == "json" {
				return writeJSON(e.stdout, res)
			}
			switch {
			case res.Already:
				_, err = fmt.Fprintf(e.stdout, "%s: already undone; nothing to do\n", args[0])
			case res.Forgot:
				_, err = fmt.Fprintf(e.stdout, "%s: forgot the import into %s (was %s); its rows are kept, and the file can be imported again\n", args[0], res.Table, res.Previous)
			default:
				_, err = fmt.Fprintf(e.stdout, "%s: undone: removed %s from %s (was %s); the file can be imported again\n", args[0], english.Plural(res.Deleted, "row"), res.Table, res.Previous)
			}
			return err
		},
	}
	e.intoFlag(c, &into)
	outputFlag(c, &output)
	c.Flags().StringVar(&table, "table", "", "the table the file was imported into, when it went to several")
	c.Flags().BoolVar(&forget, "forget", false, "keep the rows and only forget the import (required for imports by --key)")
	nf.register(c)
	return c
}
