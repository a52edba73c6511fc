package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/idemport/idemport/internal/english"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

type importOptions struct {
	into          target
	table         string
	key           []string
	versionCol    string
	fileID        string
	columns       []string
	names         []string
	noHeader      bool
	rename        []string
	selects       []string
	skipLines     int
	nulls         []string
	encoding      string
	name          string
	sheet         string
	format        string
	delimiter     string
	quotes        bool
	snapshot      bool
	atomic        bool
	evolve        string
	deleteMode    string
	scope         []string
	maxDelete     string
	asOf          string
	partitionRows int64
	rowsFlag      *pflag.Flag // --partition-rows, to tell whether it was given
	partBytes     string
	maxRejects    string
	lease         time.Duration
	trigger       string
	wait          string
	workers       int
	busyTimeout   time.Duration
	output        string
	progress      string
	metricsFile   string
	metricsJob    string
	rehash        bool
	reapply       bool
	replace       bool
	minAge        string
	dryRun        bool
	notify        notifyFlags
	quiet         bool
	logs          logFlags
	remote        remoteFlags
}

func newImportCmd(e *env) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "import [flags] FILE|DIR|GLOB|URL...",
		Short: "Import files, each exactly once in effect",
		Long: `Import each FILE into the target table. A file already imported with the same content and
mapping is a duplicate: nothing is written, and the earlier import's outcome is reported
(in JSON, rows are this run's, all zero, and the stored counts are under "previous"). A file whose
import was interrupted resumes from its last committed partition. A DIR imports every supported
file below it; a directory or GLOB that yields no file prints "no files to import" and exits 0.
A URL is an s3://BUCKET/KEY object, every object below an s3://BUCKET/PREFIX/ in key order
(--glob filters their names), or an http(s):// file, read by ranged requests pinned to the
version first seen; an imported object is known again by one HEAD request.

Exit codes: 0 imported, resumed or duplicate; 1 failed (rerun to resume); 2 usage;
3 conflict with an earlier import of the same file ID; 4 busy (another run holds it);
5 refused (too many bad rows; nothing written); 130 interrupted. With several files the
most severe wins: 1 > 5 > 3 > 4 > 0.`,
		Example: `  # import into ./idemport.db, table "orders"; again: "duplicate", nothing written
  idemport import orders.csv

  # upsert by order_id across daily files, never rolling a row back to an older version
  idemport import --into sqlite:///data/wh.db --table orders --key order_id --version-col updated_at day1.csv day2.jsonl

  # name the import; the same name with other content later is a conflict (exit 3)
  idemport import --file-id orders/2026-11-28 orders.csv

  # each delivery of a named feed is its own import, even when its bytes repeat an earlier one
  idemport import --table orders --key order_id --file-id 'orders/{name}' /srv/drop/orders-*.csv

  # every .csv.gz object below a prefix on MinIO, and a file behind HTTPS
  idemport import --s3-endpoint http://minio:9000 --s3-path-style --glob '*.csv.gz' s3://drop/orders/ https://example.com/daily.csv

  # from cron: leave files younger than 5 minutes (still uploading) for the next run
  idemport import --trigger cron --min-age 5m /srv/drop/*.csv

  # from cron: wait for an overlapping run instead of exiting 4, results as JSON lines
  idemport import --trigger cron --wait=10m --output json /srv/drop/*.csv`,
		// import checks its own arguments, so that a usage error still
		// writes the metrics file.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runImport(c, e, o, args)
		},
	}
	importFlags(e, c, o)
	return c
}

// importFlags registers every flag of import on c, bound to o: the one
// list of them, which run and each feed of idemport.yaml take too.
func importFlags(e *env, c *cobra.Command, o *importOptions) {
	f := c.Flags()
	mappingFlags(e, c, o)
	decisionFlags(c, o)
	f.Var(newDurationFlag(&o.lease, pipeline.DefaultLease), "lease", "how long a claim survives without a heartbeat before another run may take it over")
	f.StringVar(&o.trigger, "trigger", pipeline.DefaultTrigger, "who runs this: manual, cron, ci or replay (recorded with the attempt)")
	f.StringVar(&o.wait, "wait", "0", "when another run holds the file, wait for it up to this long (a duration such as 30m, or forever) instead of exiting 4")
	f.IntVar(&o.workers, "workers", 1, "partitions applied at once")
	f.Var(newDurationFlag(&o.busyTimeout, 30*time.Second), "busy-timeout", "how long to wait for a lock another import holds (SQLite's write lock, a PostgreSQL row or table lock) before exiting busy (4)")
	outputFlag(c, &o.output)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print results only for files that were not duplicates (and no summary line)")
	f.BoolVar(&o.dryRun, "dry-run", false, "identify, decide and plan each file and print the plan; write nothing")
	f.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (only on a terminal, and not with -q), always or never")
	f.StringVar(&o.metricsFile, "metrics-file", "", "write Prometheus metrics of this run to this file (for node_exporter's textfile collector), whatever the outcome")
	f.StringVar(&o.metricsJob, "metrics-job", "", "the job label of every sample in --metrics-file (default: the file's name without extension)")
	o.notify.register(c)
	o.logs.register(c)
	o.remote.registerGlob(c)
}

// decisionFlags registers, for import and plan alike, the flags besides the
// mapping's (mappingFlags) that change what an import of a file decides and
// how it ends: plan takes every one of them, so that it can predict each
// decision import makes. This is their one home.
func decisionFlags(c *cobra.Command, o *importOptions) {
	f := c.Flags()
	f.StringVar(&o.maxDelete, "max-delete", "10%", "with --snapshot: refuse (exit 5, nothing deleted, resumable) a sweep removing more rows than this, a count or a percentage of the scope; an empty file sweeps only with 100%")
	f.StringVar(&o.asOf, "as-of", "", "with --snapshot: the time the file's data is as of (RFC 3339 or YYYY-MM-DD; default its modification time); an older snapshot than the last applied is stale and writes nothing")
	f.Int64Var(&o.partitionRows, "partition-rows", reader.DefaultPartitionRows, "rows per partition, the unit of commit and resume (unset, on SQLite with --key: growing from this to ten times this)")
	o.rowsFlag = f.Lookup("partition-rows")
	f.StringVar(&o.partBytes, "partition-bytes", english.Bytes(reader.DefaultPartitionBytes), "bytes per partition at most (plus one row, or one record batch), as rows per partition are, e.g. 16MiB (CSV, TSV, JSONL, and Arrow IPC, whose partitions gather its record batches; a Parquet row group, or an Arrow IPC file's record batch, of at least twice --partition-rows rows is cut by --partition-rows alone; a stream's record batch is never cut)")
	f.StringVar(&o.maxRejects, "max-rejects", "0", "bad rows allowed before the file is refused, a count or a percentage such as 0.5%; allowed ones go to the rejects quarantine")
	f.StringVar(&o.minAge, "min-age", "", "skip files modified more recently than this (e.g. 5m, 2h, 1d): they may still be being written")
	f.BoolVar(&o.reapply, "reapply", false, "apply a completed file again as a new attempt (safe in ordinal mode; with --key and no --version-col, its values overwrite newer ones)")
	f.BoolVar(&o.replace, "replace", false, "with a --file-id that names the file ('{path}', '{name}'): new content of a completed file ID replaces it (the earlier version's rows removed, or by --key its keys the new one lacks deleted); with --atomic in one transaction")
	f.BoolVar(&o.rehash, "rehash", false, "hash every file even when the quick check (path, size, times, inode) says it is unchanged")
}

func (o *importOptions) request(path string) (pipeline.Request, error) {
	m, err := o.mapping()
	if err != nil {
		return pipeline.Request{}, err
	}
	wait, err := parseWait(o.wait)
	if err != nil {
		return pipeline.Request{}, err
	}
	if err := o.checkRun(); err != nil {
		return pipeline.Request{}, err
	}
	partBytes, err := english.ParseBytes(o.partBytes)
	if err != nil {
		return pipeline.Request{}, usageError{fmt.Errorf("--partition-bytes %v", err)}
	}
	var minAge time.Duration
	if o.minAge != "" {
		if minAge, err = parseAge(o.minAge); err != nil {
			return pipeline.Request{}, usageError{fmt.Errorf("--min-age %v", err)}
		}
	}
	limit, err := pipeline.ParseRejectLimit(o.maxRejects)
	if err != nil {
		return pipeline.Request{}, usageError{fmt.Errorf("--max-rejects %v", err)}
	}
	maxDelete, err := parseMaxDelete(o.maxDelete)
	if err != nil {
		return pipeline.Request{}, err
	}
	asOf, err := parseAsOf(o.asOf)
	if err != nil {
		return pipeline.Request{}, err
	}
	return pipeline.Request{
		MaxDelete: maxDelete, AsOf: asOf,
		Name: o.name, Stdin: os.Stdin,
		Path: path, FileID: o.fileID, Mapping: m, Remote: o.remote.client(), SpoolDir: o.remote.spool(), PartitionRows: o.requestRows(), PartitionBytes: partBytes, MaxRejects: limit,
		Lease: o.lease, Trigger: o.trigger, Wait: wait, Workers: o.workers, Rehash: o.rehash, Reapply: o.reapply, Replace: o.replace, MinAge: minAge,
	}, nil
}

// mapping returns the mapping the flags say; a flag it cannot take is a
// usage error.
func (o *importOptions) mapping() (pipeline.Mapping, error) {
	cols, err := pipeline.ParseColumns(o.columns)
	if err != nil {
		return pipeline.Mapping{}, usageError{err}
	}
	m := pipeline.Mapping{Table: o.table, Key: o.key, Version: o.versionCol, Columns: cols, Quotes: o.quotes, Atomic: o.atomic,
		NoHeader: o.noHeader, Names: o.names, Select: o.selects, SkipLines: o.skipLines, Null: o.nulls, Sheet: o.sheet}
	if m.Rename, err = pipeline.ParseRename(o.rename); err != nil {
		return pipeline.Mapping{}, usageError{err}
	}
	if o.encoding != "" {
		if m.Encoding, err = reader.EncodingName(o.encoding); err != nil {
			return pipeline.Mapping{}, usageError{fmt.Errorf("--encoding: %w", err)}
		}
	}
	if o.skipLines < 0 {
		return pipeline.Mapping{}, usageError{fmt.Errorf("--skip-lines must not be negative")}
	}
	if m.Evolve, err = pipeline.ParseEvolve(o.evolve); err != nil {
		return pipeline.Mapping{}, usageError{err}
	}
	if m.Snapshot, err = o.snapshotMapping(); err != nil {
		return pipeline.Mapping{}, err
	}
	if o.format != "" {
		if m.Format, err = reader.ParseFormat(o.format); err != nil {
			return pipeline.Mapping{}, usageError{err}
		}
	}
	if o.delimiter != "" {
		if m.Delimiter, err = parseDelimiter(o.delimiter); err != nil {
			return pipeline.Mapping{}, err
		}
	}
	return m, nil
}

// snapshotMapping returns the snapshot --snapshot, --delete and
// --snapshot-scope say; nil without --snapshot.
func (o *importOptions) snapshotMapping() (*pipeline.Snapshot, error) {
	if !o.snapshot && (len(o.scope) > 0 || (o.deleteMode != "" && o.deleteMode != "hard")) {
		return nil, usageError{fmt.Errorf("--delete and --snapshot-scope need --snapshot")}
	}
	if !o.snapshot {
		return nil, nil
	}
	s := &pipeline.Snapshot{}
	switch o.deleteMode {
	case "", "hard":
	case "soft":
		s.Soft = true
	default:
		return nil, usageError{fmt.Errorf("--delete %q: want hard or soft", o.deleteMode)}
	}
	var err error
	if s.Scope, err = pipeline.ParseScope(o.scope); err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

// parseDelimiter returns the one-byte field delimiter --delimiter names
// (\t and tab name the tab).
func parseDelimiter(given string) (byte, error) {
	d := given
	if d == `\t` || d == "tab" {
		d = "\t"
	}
	if len(d) != 1 || d[0] >= 0x80 || d == `"` || d == "\n" || d == "\r" {
		return 0, usageError{fmt.Errorf("--delimiter %q: want one ASCII character other than a quote or line end", given)}
	}
	return d[0], nil
}

// requestRows returns the request's PartitionRows: 0 when --partition-rows
// was not given, which lets the import choose (growing partitions on
// SQLite with a key: pipeline.Request.PartitionRows).
func (o *importOptions) requestRows() int64 {
	if o.rowsFlag != nil && !o.rowsFlag.Changed {
		return 0
	}
	return o.partitionRows
}

// checkRun checks the flags of how an import runs that need no parsing.
func (o *importOptions) checkRun() error {
	switch o.trigger {
	case "manual", "cron", "ci", "replay":
	default:
		return usageError{fmt.Errorf("--trigger %q: want manual, cron, ci or replay", o.trigger)}
	}
	if o.partitionRows <= 0 || o.workers <= 0 || o.lease <= 0 {
		return usageError{fmt.Errorf("--partition-rows, --workers and --lease must be positive")}
	}
	return nil
}

// parseMaxDelete returns the limit --max-delete gives; nil when empty.
func parseMaxDelete(given string) (*pipeline.RejectLimit, error) {
	if given == "" {
		return nil, nil
	}
	l, err := pipeline.ParseRejectLimit(given)
	if err != nil {
		return nil, usageError{fmt.Errorf("--max-delete %v", err)}
	}
	return &l, nil
}

// parseAsOf returns the time --as-of gives, RFC 3339 or a date; zero when
// empty.
func parseAsOf(given string) (time.Time, error) {
	var asOf time.Time
	var err error
	if given != "" {
		if asOf, err = time.Parse(time.RFC3339Nano, given); err != nil {
			if asOf, err = time.Parse(time.DateOnly, given); err != nil {
				return time.Time{}, usageError{fmt.Errorf("--as-of %q: want RFC 3339 (2026-11-30T02:00:00Z) or YYYY-MM-DD", given)}
			}
		}
	}
	return asOf, nil
}

// parseWait reads --wait: a duration, 0 (do not wait), or forever.
func parseWait(s string) (time.Duration, error) {
	switch s {
	case "forever":
		return 100 * 365 * 24 * time.Hour, nil
	case "", "0":
		return 0, nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return 0, usageError{fmt.Errorf("--wait %q: want a duration such as 30s, 10m or 1d, or forever (--wait takes a value)", s)}
	}
	return d, nil
}

// runImport imports args and, with --metrics-file, writes the metrics file
// whatever happened, even after a usage error or an unreachable database.
// A failure to write it is reported, never swallowed: it makes an
// otherwise clean run exit 1 and is printed beside a run that already failed.
func runImport(c *cobra.Command, e *env, o *importOptions, args []string) error {
	return withMetrics(c, e, o, func(run *importRun) error { return importFiles(c, e, o, args, run) })
}

// withMetrics runs body and, with --metrics-file, writes the metrics file
// of what it left in its importRun, whatever happened.
func withMetrics(c *cobra.Command, e *env, o *importOptions, body func(*importRun) error) error {
	started := time.Now()
	var job string
	if o.metricsFile != "" {
		var err error
		if job, err = metricsJob(o.metricsFile, o.metricsJob); err != nil {
			return err
		}
	} else if o.metricsJob != "" {
		return usageError{errors.New("--metrics-job names the job of --metrics-file, which is not set")}
	}
	run := &importRun{}
	defer func() {
		if run.eng != nil {
			run.eng.Close()
		}
	}()
	err := body(run)
	if o.metricsFile == "" || o.dryRun {
		return err
	}
	m := runMetrics{job: job, run: run.metrics, code: exitCode(c.Context(), err), took: time.Since(started), end: time.Now()}
	ledgerErr := run.ledgerMetrics(c, o, &m)
	if ledgerErr != nil && m.code == exitOK {
		m.code = exitCode(c.Context(), ledgerErr) // as this run will exit
	}
	for _, merr := range []error{ledgerErr, writeMetrics(o.metricsFile, m)} {
		if merr == nil {
			continue
		}
		merr = fmt.Errorf("metrics file: %w", merr)
		if err == nil {
			err = merr // printed by run, exit 1
		} else {
			fmt.Fprintln(e.stderr, "idemport:", esc(merr.Error()))
		}
	}
	return err
}

// importRun is what importFiles leaves for the metrics file: the numbers
// of its results, and the target once opened (closed by withMetrics).
type importRun struct {
	eng     *pipeline.Engine
	metrics pipeline.RunMetrics
}

// ledgerMetrics reads the ledger's numbers into m, opening the target
// read-only when the run did not open it and ended well (no file to
// import: the ledger's gauges still belong in the file).
func (run *importRun) ledgerMetrics(c *cobra.Command, o *importOptions, m *runMetrics) error {
	if run.eng == nil && m.code == exitOK {
		var err error
		if run.eng, err = openReadOnly(c, o.into); err != nil {
			return err
		}
	}
	if run.eng == nil {
		return nil
	}
	lm, err := run.eng.LedgerMetrics(context.WithoutCancel(c.Context()))
	if lm.Operations != nil {
		m.ledger = &lm
	}
	return err
}

func importFiles(c *cobra.Command, e *env, o *importOptions, args []string, run *importRun) error {
	if err := checkImportArgs(o, args); err != nil {
		return err
	}
	files, err := o.expand(c.Context(), args)
	if err != nil {
		return err
	}
	base, err := o.request("") // every flag is checked, even when there is no file
	if err != nil {
		return err
	}
	ui, log, err := o.progressUI(c, e)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		// A drop directory on a day without a file, or a glob that matched
		// nothing: not an error, so that a scheduled run stays green.
		textf(e.stderr, "idemport: no files to import in %s\n", redacted(args))
		return nil
	}
	reqs := requests(base, files)
	if o.dryRun {
		return dryRun(c, e, o, "", reqs)
	}
	return importRequests(c, e, o, ui, log, reqs, run)
}

// checkImportArgs checks what import must check before it looks at its
// arguments' files.
func checkImportArgs(o *importOptions, args []string) error {
	if _, err := parseWait(o.wait); err != nil { // first: "--wait FILE" reads FILE as the duration
		return err
	}
	if len(args) == 0 {
		return usageError{errors.New("import needs at least one FILE, DIR or GLOB")}
	}
	return checkOutput(o.output)
}

// importRequests imports reqs into the target, with their events, prints
// what happened and returns the error whose exit code is the run's.
func importRequests(c *cobra.Command, e *env, o *importOptions, ui *progressUI, log *slog.Logger, reqs []pipeline.Request, run *importRun) error {
	sinks, err := o.notify.sinks(e)
	if err != nil {
		return err
	}
	defer closeSinks(sinks)
	ctx := c.Context()
	eng, err := o.into.open(ctx, pipeline.Options{Logger: log, Failpoints: e.failpoints, BusyTimeout: o.busyTimeout, Notify: sinks})
	if err != nil {
		return err
	}
	run.eng = eng
	sum, err := importBatch(ctx, e, o, ui, eng, reqs, "")
	run.metrics.Add("", sum.Results...)
	if err != nil {
		return err
	}
	if o.output == "text" && len(sum.Results) > 1 && !o.quiet {
		fmt.Fprintln(e.stdout, summary(sum.Results))
	}
	if len(sinks) > 0 {
		reportDelivery(e, sum.Delivery)
	}
	return outcome(ctx, sum.NotClean())
}

// expand expands import's arguments (or a feed's source) into the files
// they name, in order.
func (o *importOptions) expand(ctx context.Context, args []string) ([]string, error) {
	files, err := expandArgs(args, o.format, func(prefix string) ([]string, error) {
		return o.remote.client().List(ctx, prefix, o.remote.glob)
	})
	if err != nil {
		return nil, err
	}
	if o.fileID != "" && len(files) > 1 && !pipeline.FileIDVaries(o.fileID) {
		return nil, usageError{fmt.Errorf("--file-id names one file, but %d were given (a template such as 'orders/{name}' names each)", len(files))}
	}
	return files, nil
}

// requests is one request per file, each base with its path.
func requests(base pipeline.Request, files []string) []pipeline.Request {
	reqs := make([]pipeline.Request, len(files))
	for i, f := range files {
		reqs[i] = base
		reqs[i].Path = f
	}
	return reqs
}

// redacted is args as they may be shown, joined by spaces.
func redacted(args []string) string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = remote.Redact(a)
	}
	return strings.Join(shown, " ")
}

// progressUI is the progress bar of --progress on stderr (never with -q
// unless --progress is given), and the logger of --log-*, which takes the
// bar off its line before each log line.
func (o *importOptions) progressUI(c *cobra.Command, e *env) (*progressUI, *slog.Logger, error) {
	progress := o.progress
	if o.quiet && !c.Flags().Changed("progress") {
		progress = "never"
	}
	ui, err := newProgressUI(e.stderr, progress)
	if err != nil {
		return nil, nil, err
	}
	log, err := o.logs.logger(ui)
	if err != nil {
		return nil, nil, err
	}
	return ui, log, nil
}

// importBatch imports reqs on eng through pipeline.ImportAll, with o's
// delivery budget: it shows each file's progress on ui, prints each
// result as it comes (unless -q and a duplicate) and what went wrong
// delivering events on stderr. feed, when not empty, names the feed of
// run the files belong to. Its error is a failure to print.
func importBatch(ctx context.Context, e *env, o *importOptions, ui *progressUI, eng *pipeline.Engine, reqs []pipeline.Request, feed string) (*pipeline.Summary, error) {
	return eng.ImportAll(ctx, reqs, pipeline.BatchOptions{
		DeliveryBudget: o.notify.timeout,
		OnStart: func(i, n int, req *pipeline.Request) {
			ui.startFile(i+1, n, req.Path)
			req.Progress = ui.update
		},
		OnImported: func(*pipeline.Result) { ui.clear() },
		OnResult:   func(r *pipeline.Result) error { return printOne(e, o, feed, r) },
		OnWarning:  func(err error) { textf(e.stderr, "idemport: %v\n", err) },
	})
}

// printOne prints r, unless -q and a duplicate.
func printOne(e *env, o *importOptions, feed string, r *pipeline.Result) error {
	if o.quiet && r.Outcome == pipeline.Duplicate {
		return nil
	}
	return printResult(e.stdout, o.output, feed, r)
}

// outcome is how a run of files ends: interrupted when ctx is done, else
// with the results that did not import cleanly, whose exit code exitCode
// decides.
func outcome(ctx context.Context, bad []*pipeline.Result) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case len(bad) > 0:
		return outcomeError{results: bad}
	}
	return nil
}

// summary counts the outcomes of several files in one line.
func summary(rs []*pipeline.Result) string {
	counts := map[pipeline.Outcome]int{}
	for _, r := range rs {
		counts[r.Outcome]++
	}
	var parts []string
	for _, o := range []pipeline.Outcome{pipeline.Imported, pipeline.Resumed, pipeline.Duplicate, pipeline.Skipped, pipeline.Stale, pipeline.Conflict,
		pipeline.Busy, pipeline.Refused, pipeline.Failed, pipeline.Interrupted} {
		if counts[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
		}
	}
	return fmt.Sprintf("%d files: %s", len(rs), strings.Join(parts, ", "))
}

// resultJSON is one line of --output json.
type resultJSON struct {
	Feed string `json:"feed,omitempty"` // with run: the feed of idemport.yaml
	*pipeline.Result
	ExitCode   int    `json:"exit_code"`
	DurationMs int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	Next       string `json:"next,omitempty"` // what to do about a busy, refused or conflicting file
}

func printResult(w io.Writer, output, feed string, r *pipeline.Result) error {
	code := resultCode(r)
	if output == "json" {
		line := resultJSON{Feed: feed, Result: r, ExitCode: code, DurationMs: r.Duration.Milliseconds(), Next: nextStep(r)}
		if r.Err != nil {
			line.Error = r.Err.Error()
		}
		return writeJSON(w, line)
	}
	text := resultText(r)
	if feed != "" {
		text = "[" + feed + "] " + text // a feed's name is letters, digits, '.', '_' and '-'
	}
	if _, err := fmt.Fprintln(w, text); err != nil {
		return err
	}
	if r.Outcome == pipeline.Skipped {
		return nil // its notes are its reason, said already
	}
	for _, n := range r.Notes {
		if _, err := textf(w, "  note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// resultText says in one line what happened to a file.
func resultText(r *pipeline.Result) string {
	var b strings.Builder
	textf(&b, "%s: ", r.File)
	switch r.Outcome {
	case pipeline.Imported, pipeline.Resumed:
		importedText(&b, r)
	case pipeline.Skipped:
		textf(&b, "skipped: %s", strings.Join(r.Notes, "; "))
		return b.String()
	case pipeline.Stale:
		b.WriteString("stale snapshot: nothing written")
		return b.String()
	case pipeline.Duplicate:
		when, stored := "", int64(0)
		if p := r.Previous; p != nil {
			when, stored = " on "+p.At, p.Rows.Read
		}
		textf(&b, "already imported into %s by attempt %s%s (%s); nothing to do", r.Table, r.AttemptID, when, english.Plural(stored, "row"))
	default:
		failedText(&b, r)
	}
	return b.String()
}

// importedText says what an import or a resumed one wrote.
func importedText(b *strings.Builder, r *pipeline.Result) {
	rows := r.Rows
	written := rows.Inserted + rows.Updated
	if r.Outcome == pipeline.Imported {
		textf(b, "imported %s into %s", english.Plural(written, "row"), r.Table)
	} else {
		textf(b, "resumed: imported %s more into %s in %d of %s (the other %d were done by other attempts)",
			english.Plural(written, "row"), r.Table, r.Partitions.Committed,
			english.Plural(r.Partitions.Total, "partition"), r.Partitions.Skipped)
	}
	textf(b, " (%s)", strings.Join(importedDetail(r), "; "))
}

// importedDetail lists, of the rows an import read, those it did not
// simply write, what else it did, and how long it took.
func importedDetail(r *pipeline.Result) []string {
	rows := r.Rows
	var extra []string
	if rows.Inserted > 0 && rows.Updated > 0 {
		extra = append(extra, fmt.Sprintf("%d new, %d updated", rows.Inserted, rows.Updated))
	}
	if rows.Unchanged > 0 {
		extra = append(extra, fmt.Sprintf("%d unchanged", rows.Unchanged))
	}
	if rows.Stale > 0 {
		extra = append(extra, fmt.Sprintf("%d stale (older than the stored row)", rows.Stale))
	}
	if rows.Superseded > 0 {
		extra = append(extra, fmt.Sprintf("%d superseded (a later row of the file has the same key)", rows.Superseded))
	}
	if rows.Rejected > 0 {
		extra = append(extra, english.Plural(rows.Rejected, "bad row")+" quarantined")
	}
	if r.Deleted > 0 {
		extra = append(extra, english.Plural(r.Deleted, "row")+" not in the snapshot deleted")
	}
	if r.RecoveredLease {
		extra = append(extra, "took over the lease of "+strings.Join(r.RecoveredFrom, ", "))
	}
	extra = append(extra, r.Duration.Round(time.Millisecond).String())
	return extra
}

// failedText says why a file was not imported, and what to do next. An
// error joining several (a file's own and the state's that could not be
// created) is said one on each line, the first after the file's name.
func failedText(b *strings.Builder, r *pipeline.Result) {
	errs := []error{r.Err}
	if j, ok := r.Err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		errs = j.Unwrap()
	}
	if r.Outcome == pipeline.Failed && !errors.As(errs[0], new(*pipeline.UsageError)) {
		b.WriteString("failed: ")
	}
	if r.Err != nil {
		b.WriteString(esc(errs[0].Error()))
		for _, err := range errs[1:] {
			b.WriteString("\n  also: " + esc(err.Error()))
		}
	} else {
		b.WriteString(string(r.Outcome))
	}
	if next := nextStep(r); next != "" {
		b.WriteString("\n  next: " + esc(next))
	}
}

// nextStep says what a user can do about a result that did not import:
// the command or flag that moves them on. (Busy says it in its error.)
func nextStep(r *pipeline.Result) string {
	switch r.Outcome {
	case pipeline.Refused:
		if mv := (*pipeline.MoveRefusedError)(nil); errors.As(r.Err, &mv) {
			if mv.KeysOne {
				// A plain import quarantines none of these rows: it
				// writes the later row of the two keys the table
				// compares as one over the earlier one.
				return fmt.Sprintf("idemport undo --forget --table %s %s (it forgets this import and drops its staging table); then import the file fixed to hold each key once as %s compares keys, or this one without --atomic, which writes the later of such rows over the earlier one (counted superseded when it is met after the later one)",
					shellWord(mv.Table), shellWord(mv.FileID), mv.Table)
			}
			return fmt.Sprintf("idemport undo --forget --table %s %s (it forgets this import and drops its staging table); then import the fixed file, or this one without --atomic to quarantine the rows the table refuses",
				shellWord(mv.Table), shellWord(mv.FileID))
		}
		if rr := (*pipeline.RowsRefusedError)(nil); errors.As(r.Err, &rr) {
			return "fix the rows in the file (or let the table take their values), or rerun with a higher --max-rejects (a count, or a percentage such as 0.5%) to quarantine them and import the rest"
		}
		if r.Refusal == nil || r.Refusal.Rejected == 0 {
			return ""
		}
		if len(r.Refusal.Widen) > 0 {
			return fmt.Sprintf("the bad values do not fit the type of column %s of the existing table %s: rerun with --evolve widen to widen it (int64 → decimal → text, float64 → text) and import every row",
				strings.Join(r.Refusal.Widen, ", "), r.Table)
		}
		if r.Refusal.NotUTF8 {
			return "this file is not UTF-8: give --encoding (for example windows-1252, the encoding of most Western European exports); or, if only these rows are bad, see them with 'idemport rejects list --table " + r.Table + " " + r.File + "'"
		}
		return fmt.Sprintf("see the bad rows with 'idemport rejects list --table %[2]s %[1]s'; fix them, or rerun with a higher --max-rejects (a count, or a percentage such as 0.5%%) to quarantine them and import the rest",
			r.File, r.Table)
	case pipeline.Conflict:
		if r.Differs == "content" && r.Stored != nil && r.Stored.State == ledger.Completed {
			return "if this is a corrected version of that file, rerun with --replace: its rows replace the earlier import's; to import this content as another file, give it its own --file-id (e.g. --file-id '{name}')"
		}
		return "to import this content as another file, give it its own --file-id (e.g. --file-id '{name}'); to replace the earlier import, 'idemport undo " +
			r.FileID + " --table " + r.Table + "' first"
	}
	return ""
}

// dryRun identifies, decides and plans each file and prints what an import
// would do, writing nothing anywhere. feed, when not empty, names the feed
// of `run` the files belong to, in each JSON line and above each plan.
func dryRun(c *cobra.Command, e *env, o *importOptions, feed string, reqs []pipeline.Request) error {
	eng, err := openReadOnly(c, o.into)
	if err != nil {
		return err
	}
	defer eng.Close()
	code := exitOK
	for _, req := range reqs {
		rep, err := pipeline.PlanFile(c.Context(), eng, req)
		if err != nil {
			return err
		}
		code = mostSevere(code, wouldCode(rep.Would))
		if o.output == "json" {
			if err := writeJSON(e.stdout, planLine{Feed: feed, PlanReport: rep, ExitCode: wouldCode(rep.Would)}); err != nil {
				return err
			}
			continue
		}
		if feed != "" {
			textf(e.stdout, "feed:        %s\n", feed)
		}
		if err := planText(e.stdout, rep); err != nil {
			return err
		}
	}
	if code != exitOK {
		return dryRunError{code}
	}
	return nil
}
