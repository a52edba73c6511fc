package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/reader"
)

func newPlanCmd(e *env) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "plan [flags] FILE",
		Short: "Show a file's identity, fingerprint, schema and partition plan; writes nothing",
		Long: `Plan identifies and validates FILE as import would, and shows what an import would decide
now — without writing anything anywhere. It takes import's mapping flags and every import flag
that changes what an import decides (--reapply, --replace, --min-age, --as-of, --max-delete, --max-rejects,
--partition-rows, --partition-bytes, --rehash), so that it predicts what the same import would do.`,
		Example: `  idemport plan orders.csv
  idemport plan --key order_id --partition-rows 50000 --output json orders.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return runPlan(c, e, o, args[0]) },
	}
	mappingFlags(e, c, o)
	decisionFlags(c, o)
	outputFlag(c, &o.output)
	feedFlag(c)
	return c
}

// runPlan shows what an import of path would decide, writing nothing.
func runPlan(c *cobra.Command, e *env, o *importOptions, path string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	req, err := o.request(path)
	if err != nil {
		return err
	}
	eng, err := openReadOnly(c, o.into)
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := pipeline.PlanFile(c.Context(), eng, req)
	if err != nil {
		return err
	}
	if o.output == "json" {
		return writeJSON(e.stdout, planLine{PlanReport: rep, ExitCode: wouldCode(rep.Would)})
	}
	return planText(e.stdout, rep)
}

// planLine is one line of plan --output json and of import --dry-run
// --output json: the report, and the exit code of the import it predicts.
type planLine struct {
	// Feed names the feed of `run --dry-run`; empty (left out) otherwise.
	Feed string `json:"feed,omitempty"`
	*pipeline.PlanReport
	ExitCode int `json:"exit_code"`
}

// wouldCode is the exit code of an import whose outcome would be would.
func wouldCode(would string) int {
	switch would {
	case pipeline.WouldConflict:
		return exitConflict
	case pipeline.WouldBusy:
		return exitBusy
	case pipeline.WouldRefuse:
		return exitRefused
	}
	return exitOK
}

// dryRunError carries the exit code an import --dry-run predicts for its
// files (the most severe); its reports were already printed.
type dryRunError struct{ code int }

func (e dryRunError) Error() string { return fmt.Sprintf("an import would exit %d", e.code) }

func planText(w io.Writer, p *pipeline.PlanReport) error {
	planHead(w, p)
	if p.Error != "" {
		return nil
	}
	planCounts(w, p)
	planSchema(w, p)
	return planPartitions(w, p)
}

// planHead writes what identifies the file and its import, and what an
// import would do.
func planHead(w io.Writer, p *pipeline.PlanReport) {
	textf(w, "file:        %s (%s%s)\n", p.File, p.Format, map[bool]string{true: ", " + string(p.Compression), false: ""}[p.Compression != ""])
	textf(w, "file ID:     %s\n", p.FileID)
	textf(w, "content:     %s\n", p.ContentDigest)
	textf(w, "mapping:     %s %s\n", p.MappingDigest, p.Mapping)
	textf(w, "table:       %s\n", p.Table)
	would := p.Would
	if p.Decision != p.Would {
		would += " (" + p.Decision + ")"
	}
	if refusal := p.Refusal(); refusal != "" {
		would += ": " + refusal
	} else if p.Detail != "" {
		would += ": " + p.Detail
	}
	textf(w, "an import would: %s\n", would)
}

// planCounts writes the plan's rows and what the import would change in
// the table.
func planCounts(w io.Writer, p *pipeline.PlanReport) {
	textf(w, "rows:        %d (%d bad, at most %s allowed)\n", p.Rows, p.Rejected, p.MaxRejects)
	if p.Superseded > 0 {
		textf(w, "superseded:  %d (a later row of the file has the same key)\n", p.Superseded)
	}
	if p.Unfit != "" && p.Unfit != p.Refusal() {
		textf(w, "unfit:       %s\n", p.Unfit)
	}
	if len(p.ColumnsAdded) > 0 {
		textf(w, "would add:   %s\n", strings.Join(p.ColumnsAdded, ", "))
	}
	if len(p.ColumnsWidened) > 0 {
		textf(w, "would widen: %s\n", strings.Join(p.ColumnsWidened, ", "))
	}
	if p.Deleted != nil {
		if *p.Deleted < 0 {
			fmt.Fprintln(w, "would sweep: the rows whose keys the file lacks (not counted for keys of this type)")
		} else {
			textf(w, "would sweep: %s the file lacks\n", english.Plural(*p.Deleted, "row"))
		}
	}
	if p.SweepRefused != "" && p.SweepRefused != p.Refusal() {
		textf(w, "sweep:       %s\n", p.SweepRefused)
	}
}

// planSchema writes the file's schema and its bad rows.
func planSchema(w io.Writer, p *pipeline.PlanReport) {
	fmt.Fprintln(w, "schema:")
	for _, c := range p.Schema {
		textf(w, "  %-24s %s\n", c.Name, c.Type)
	}
	for _, b := range p.Rejects {
		where := ""
		if b.Offset >= 0 {
			where = fmt.Sprintf(" (byte %d)", b.Offset)
		}
		fmt.Fprintf(w, "bad row %d%s column %q value %q: %s\n", b.Ordinal, where, b.Column, clip(b.Value, 80), esc(b.Message))
	}
}

// planPartitions writes the plan's partitions as a table.
func planPartitions(w io.Writer, p *pipeline.PlanReport) error {
	switch p.Format {
	case reader.Parquet:
		textf(w, "partitions:  %d (one per row group)\n", len(p.Partitions))
	case reader.Arrow, reader.Arrows:
		textf(w, "partitions:  %d (one per record batch)\n", len(p.Partitions))
	default:
		if p.GrowTo > 0 {
			textf(w, "partitions:  %d (growing from %d rows to %d, at most %s each)\n", len(p.Partitions), p.PartitionRows, p.GrowTo, english.Bytes(p.PartitionBytes))
			break
		}
		textf(w, "partitions:  %d (at most %d rows or %s each)\n", len(p.Partitions), p.PartitionRows, english.Bytes(p.PartitionBytes))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PARTITION\tFIRST ROW\tROWS\tBAD\tBYTE OFFSET\tBYTES\t")
	for _, pt := range p.Partitions {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t\n", pt.Index, pt.First, pt.Rows, pt.Rejected, pt.Offset, pt.Length)
	}
	return tw.Flush()
}
