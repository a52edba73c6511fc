package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/config"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
	"github.com/idemport/idemport/reader/remote"
)

// defaultConfig is the feeds file run reads when neither --config nor
// IDEMPORT_CONFIG names one.
const defaultConfig = "idemport.yaml"

// runOnly are the import flags that say how a run goes rather than what a
// feed imports: run takes them on its command line (or from the
// environment), and idemport.yaml does not.
var runOnly = map[string]bool{
	"output": true, "quiet": true, "progress": true, "dry-run": true,
	"log-format": true, "log-level": true, "metrics-file": true, "metrics-job": true,
}

// feedFlags is a fresh set of the flags a feed of idemport.yaml may set,
// bound to the importOptions it returns: import's own flags (importFlags),
// less those of the run as a whole (runOnly).
func feedFlags(e *env) (*pflag.FlagSet, *importOptions) {
	c := &cobra.Command{Use: "feed"}
	o := &importOptions{}
	importFlags(e, c, o)
	fs := pflag.NewFlagSet("feed", pflag.ContinueOnError)
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if !runOnly[fl.Name] {
			fs.AddFlag(fl)
		}
	})
	return fs, o
}

// feedRun is one feed, ready to run: its options as the file, the
// environment and run's command line set them, and its request checked.
type feedRun struct {
	feed *config.Feed
	fs   *pflag.FlagSet // bound to o
	o    *importOptions
	base pipeline.Request
}

type runFlags struct {
	config   string
	failFast bool
}

func newRunCmd(e *env) *cobra.Command {
	o := &importOptions{}
	r := &runFlags{}
	c := &cobra.Command{
		Use:   "run [flags] [FEED...]",
		Short: "Import every feed of idemport.yaml, or those named",
		Long: `Run imports each feed declared in the feeds file (--config, else $IDEMPORT_CONFIG, else
./idemport.yaml), or only the FEEDs named, in the file's order: each exactly as
'idemport import' would with the feed's source and options, on one connection per target.
The whole file is checked before anything runs: an unknown key, a value of the wrong type,
options that do not go together or an undefined ${VAR} exits 2 naming its file, line and
column. An import flag given to run applies to every feed and wins over the file.

A feed that does not import cleanly does not stop the others (unless --fail-fast); the exit
code is the most severe seen, as for import: 1 > 5 > 3 > 4 > 0.`,
		Example: `  # every feed of ./idemport.yaml, as a nightly job
  idemport run --trigger cron

  # two feeds of another file, results as JSON lines (each with its "feed")
  idemport run --config /etc/idemport/warehouse.yaml --output json orders products

  # what each feed would do, writing nothing
  idemport run --dry-run`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return withMetrics(c, e, o, func(run *importRun) error { return runFeeds(c, e, o, r, args, run) })
		},
	}
	importFlags(e, c, o)
	c.Flags().StringVar(&r.config, "config", "", "the feeds file (default $IDEMPORT_CONFIG, else ./idemport.yaml)")
	c.Flags().BoolVar(&r.failFast, "fail-fast", false, "stop at the first feed that does not import cleanly; the feeds after it do not run")
	return c
}

// configPath is the feeds file: --config, else $IDEMPORT_CONFIG, else
// ./idemport.yaml when present.
func (r *runFlags) configPath(e *env) (string, error) {
	if r.config != "" {
		return r.config, nil
	}
	if p := e.getenv("IDEMPORT_CONFIG"); p != "" {
		return p, nil
	}
	if _, err := os.Stat(defaultConfig); err != nil {
		return "", usageError{fmt.Errorf("no feeds file: give --config FILE, set IDEMPORT_CONFIG, or write ./%s", defaultConfig)}
	}
	return defaultConfig, nil
}

// loadFeeds reads the feeds file and readies every feed, checking the
// whole file before anything runs: every mistake found is an error naming
// its place, joined in one *pipeline.UsageError (exit 2). cmdline is run's
// own flag set: the flags set on it (on the command line or from the
// environment) override the file's.
func loadFeeds(e *env, path string, cmdline *pflag.FlagSet) ([]*feedRun, error) {
	// An empty variable counts as unset: "into: ${DSN}" with DSN empty
	// would otherwise import into the default database.
	lookup := func(name string) (string, bool) {
		v := e.getenv(name)
		return v, v != ""
	}
	file, err := config.Read(path, lookup)
	if err != nil {
		return nil, &pipeline.UsageError{Err: err}
	}
	var errs []error
	var runs []*feedRun
	for _, feed := range file.Feeds {
		fs, fo := feedFlags(e)
		if err := file.Apply(feed, fs); err != nil {
			errs = append(errs, err)
			continue
		}
		overlayFlags(fs, cmdline)
		fr := &feedRun{feed: feed, fs: fs, o: fo}
		if err := fr.check(); err != nil {
			errs = append(errs, &config.Error{Pos: feed.Pos, Err: fmt.Errorf("feed %s: %w", feed.Name, err)})
			continue
		}
		runs = append(runs, fr)
	}
	if len(errs) > 0 {
		return nil, &pipeline.UsageError{Err: errors.Join(errs...)}
	}
	return runs, nil
}

// check builds the feed's request as import would and checks what import
// checks before its first file, and the mapping's options together.
func (fr *feedRun) check() error {
	if _, err := parseWait(fr.o.wait); err != nil {
		return err
	}
	base, err := fr.o.request("")
	if err != nil {
		return err
	}
	if err := base.Mapping.Check(); err != nil {
		return err
	}
	if fr.o.fileID != "" && !pipeline.FileIDVaries(fr.o.fileID) && (len(fr.feed.Source) > 1 || strings.ContainsAny(fr.feed.Source[0], "*?[")) {
		return usageError{fmt.Errorf("--file-id names one file, but the source may name several (a template such as 'orders/{name}' names each)")}
	}
	if fr.o.notify.timeout <= 0 {
		return usageError{fmt.Errorf("--notify-timeout must be positive")}
	}
	fr.base = base
	return nil
}

// overlayFlags sets on fs every flag set on from (given on the command line,
// or from the environment), so that they win over the file's.
func overlayFlags(fs, from *pflag.FlagSet) { copyFlags(fs, from, true) }

// copyFlags sets on fs each flag set on from that fs has, and, unless
// override, that fs does not have set already.
func copyFlags(fs, from *pflag.FlagSet, override bool) {
	from.Visit(func(fl *pflag.Flag) {
		to := fs.Lookup(fl.Name)
		if to == nil || to.Changed && !override {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			_ = to.Value.(pflag.SliceValue).Replace(sv.GetSlice()) // values its twin accepted
		} else {
			_ = to.Value.Set(fl.Value.String())
		}
		to.Changed = true
	})
}

// runFeeds runs the selected feeds of the file in its order.
func runFeeds(c *cobra.Command, e *env, o *importOptions, r *runFlags, names []string, run *importRun) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	feeds, err := r.feeds(c, e, names)
	if err != nil {
		return err
	}
	ui, log, err := o.progressUI(c, e)
	if err != nil {
		return err
	}
	ctx := c.Context()
	fs := &feedsRun{c: c, e: e, o: o, ui: ui, run: run, targets: &targetSet{e: e, log: log}, dryCode: exitOK}
	defer func() { fs.targets.close(run.eng) }() // run.eng is withMetrics' to close
	if err := fs.each(ctx, feeds, r.failFast); err != nil {
		return err
	}
	if o.output == "text" && len(fs.results) > 1 && !o.quiet {
		fmt.Fprintln(e.stdout, summary(fs.results))
	}
	if err := outcome(ctx, fs.bad); err != nil {
		return err
	}
	if fs.dryCode != exitOK {
		return dryRunError{fs.dryCode}
	}
	return nil
}

// feedsRun is one run of feeds: its output, its targets, and what its
// feeds did so far.
type feedsRun struct {
	c       *cobra.Command
	e       *env
	o       *importOptions // the command line's: output and quiet
	ui      *progressUI
	run     *importRun
	targets *targetSet
	results []*pipeline.Result
	bad     []*pipeline.Result // the results that did not import cleanly
	dryCode int                // the most severe code a --dry-run predicts
}

// each runs feeds in turn until ctx is cancelled or, with failFast, one
// has failed: the feeds not run are named on stderr.
func (fs *feedsRun) each(ctx context.Context, feeds []*feedRun, failFast bool) error {
	for i, fr := range feeds {
		if ctx.Err() != nil {
			break
		}
		if failFast && len(fs.bad) > 0 {
			rest := make([]string, 0, len(feeds)-i)
			for _, f := range feeds[i:] {
				rest = append(rest, f.feed.Name)
			}
			textf(fs.e.stderr, "idemport: --fail-fast: not run: %s\n", strings.Join(rest, ", "))
			break
		}
		if err := fs.feed(ctx, fr); err != nil {
			return err
		}
	}
	return nil
}

// feed runs the files of one feed, each delivery pass within the feed's
// budget; a feed that stops before its first file has one failed result
// saying why, and the other feeds go on. Its error is a failure to print.
func (fs *feedsRun) feed(ctx context.Context, fr *feedRun) error {
	fr.o.output, fr.o.quiet = fs.o.output, fs.o.quiet
	reqs, err := fr.requests(ctx)
	if err == nil && len(reqs) == 0 {
		textf(fs.e.stderr, "idemport: feed %s: no files to import in %s\n", fr.feed.Name, redacted(fr.feed.Source))
		return nil
	}
	if err == nil && fs.o.dryRun {
		var dry dryRunError
		if err = dryRun(fs.c, fs.e, fr.o, fr.feed.Name, reqs); err == nil || errors.As(err, &dry) {
			fs.dryCode = mostSevere(fs.dryCode, dry.code)
			return nil
		}
	}
	var t *openTarget
	if err == nil {
		t, err = fs.targets.open(ctx, fr.o)
	}
	if err != nil {
		res := feedFailure(fr, err)
		if err := printOne(fs.e, fs.o, fr.feed.Name, res); err != nil {
			return err
		}
		fs.keep(fr.feed.Name, res)
		return nil
	}
	if fs.run.eng == nil {
		fs.run.eng = t.eng
	}
	sum, err := importBatch(ctx, fs.e, fr.o, fs.ui, t.eng, reqs, fr.feed.Name)
	fs.keep(fr.feed.Name, sum.Results...)
	if err != nil {
		return err
	}
	if len(t.sinks) > 0 {
		reportDelivery(fs.e, sum.Delivery)
	}
	return nil
}

// keep keeps the results of feed, for the summary line, the exit code and
// the metrics file.
func (fs *feedsRun) keep(feed string, rs ...*pipeline.Result) {
	fs.results = append(fs.results, rs...)
	fs.run.metrics.Add(feed, rs...)
	for _, r := range rs {
		if !r.Clean() {
			fs.bad = append(fs.bad, r)
		}
	}
}

// feeds loads the feeds file and returns the feeds names select (all of
// them when names is empty).
func (r *runFlags) feeds(c *cobra.Command, e *env, names []string) ([]*feedRun, error) {
	path, err := r.configPath(e)
	if err != nil {
		return nil, err
	}
	all, err := loadFeeds(e, path, c.Flags())
	if err != nil {
		return nil, err
	}
	return selectFeeds(all, names, path)
}

// selectFeeds is the feeds named, in the file's order, or all of them.
func selectFeeds(all []*feedRun, names []string, path string) ([]*feedRun, error) {
	if len(names) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []*feedRun
	for _, fr := range all {
		if want[fr.feed.Name] {
			out = append(out, fr)
			delete(want, fr.feed.Name)
		}
	}
	for _, n := range names {
		if want[n] {
			have := make([]string, len(all))
			for i, fr := range all {
				have[i] = fr.feed.Name
			}
			return nil, usageError{fmt.Errorf("%s has no feed %q (it has %s)", path, n, strings.Join(have, ", "))}
		}
	}
	return out, nil
}

// requests expands the feed's source into one request per file, as
// import expands its arguments.
func (fr *feedRun) requests(ctx context.Context) ([]pipeline.Request, error) {
	files, err := fr.o.expand(ctx, fr.feed.Source)
	if err != nil {
		return nil, err
	}
	return requests(fr.base, files), nil
}

// feedFailure is the result of a feed that stopped before its first file.
func feedFailure(fr *feedRun, err error) *pipeline.Result {
	if errors.As(err, new(usageError)) {
		err = &pipeline.UsageError{Err: err} // exit 2, as import's
	}
	table := fr.o.table
	return &pipeline.Result{File: strings.Join(fr.feed.Source, " "), Table: table, Outcome: pipeline.Failed, Err: err}
}

// openTarget is one open target of a run, with its event sinks.
type openTarget struct {
	eng   *pipeline.Engine
	sinks []idemtype.EventSink
}

// targetSet opens each target the feeds name once and shares it between
// them: feeds with the same --into, --state-schema, --busy-timeout and
// --notify use one connection.
type targetSet struct {
	e      *env
	log    *slog.Logger
	opened map[string]*openTarget
}

// open is the target of a feed's options, opened on first use.
func (ts *targetSet) open(ctx context.Context, o *importOptions) (*openTarget, error) {
	key := strings.Join([]string{o.into.resolved(), o.into.stateSchema, o.busyTimeout.String(), strings.Join(o.notify.urls, "\n")}, "\x00")
	if t, ok := ts.opened[key]; ok {
		return t, nil
	}
	sinks, err := o.notify.sinks(ts.e)
	if err != nil {
		return nil, err
	}
	eng, err := o.into.open(ctx, pipeline.Options{Logger: ts.log, Failpoints: ts.e.failpoints, BusyTimeout: o.busyTimeout, Notify: sinks})
	if err != nil {
		closeSinks(sinks)
		return nil, err
	}
	if ts.opened == nil {
		ts.opened = map[string]*openTarget{}
	}
	t := &openTarget{eng: eng, sinks: sinks}
	ts.opened[key] = t
	return t, nil
}

// close closes every target opened but keep, and every sink.
func (ts *targetSet) close(keep *pipeline.Engine) {
	for _, t := range ts.opened {
		if t.eng != keep {
			t.eng.Close()
		}
		closeSinks(t.sinks)
	}
}

// feedFlag registers --feed and --config on an operator command: with
// --feed NAME, the command takes the target, table and mapping of that
// feed (applyFeed).
func feedFlag(c *cobra.Command) {
	c.Flags().String("feed", "", "take the target, table and mapping of this feed of the feeds file; flags given (or their IDEMPORT_ variables) win over it")
	c.Flags().String("config", "", "the feeds file of --feed (default $IDEMPORT_CONFIG, else ./idemport.yaml)")
}

// applyFeed, when c has --feed NAME, reads the feeds file (checked whole,
// as run checks it) and sets each of c's flags that the command line and
// the environment left unset from that feed's options, and keeps the feed
// in e.feed for the commands that take its files. A feed the file lacks is
// a usage error.
func applyFeed(c *cobra.Command, e *env) error {
	fl := c.Flags().Lookup("feed")
	if fl == nil || fl.Value.String() == "" {
		return nil
	}
	path, err := (&runFlags{config: c.Flags().Lookup("config").Value.String()}).configPath(e)
	if err != nil {
		return err
	}
	all, err := loadFeeds(e, path, c.Flags())
	if err != nil {
		return err
	}
	sel, err := selectFeeds(all, []string{fl.Value.String()}, path)
	if err != nil {
		return err
	}
	copyFlags(c.Flags(), sel[0].fs, false)
	e.feed = sel[0]
	return nil
}

// feedFiles is what the feed of --feed imports now: its source expanded
// as run expands it, for the commands that take files (verify).
func feedFiles(c *cobra.Command, e *env) ([]string, error) {
	if e.feed == nil {
		return nil, nil
	}
	reqs, err := e.feed.requests(c.Context())
	if err != nil {
		return nil, err
	}
	files := make([]string, len(reqs))
	for i, r := range reqs {
		files[i] = r.Path
	}
	return files, nil
}

// feedStatus is one line of "idemport feeds": a feed and the last
// operation on its table.
type feedStatus struct {
	Feed      string   `json:"feed"`
	Table     string   `json:"table,omitempty"`
	Target    string   `json:"target"`
	Source    []string `json:"source"`
	Last      string   `json:"last_state,omitempty"`
	File      string   `json:"last_file,omitempty"`
	Rows      *int64   `json:"rows,omitempty"`
	UpdatedAt string   `json:"updated_at,omitempty"`
	AgeS      *int64   `json:"age_seconds,omitempty"`
	Error     string   `json:"error,omitempty"`
}

func newFeedsCmd(e *env) *cobra.Command {
	var output, configPath string
	c := &cobra.Command{
		Use:   "feeds",
		Short: "List the feeds of idemport.yaml with their last outcome, rows and age",
		Long: `Feeds lists each feed of the feeds file (--config, else $IDEMPORT_CONFIG, else
./idemport.yaml) with its table and target, and the last operation on its table there: its
state, file, rows and age. A feed that does not name its table shows no last operation.
It writes nothing.`,
		Example: `  idemport feeds
  idemport feeds --output json | jq -c 'select(.last_state != "completed")'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return listFeeds(c, e, output, configPath) },
	}
	outputFlag(c, &output)
	c.Flags().StringVar(&configPath, "config", "", "the feeds file (default $IDEMPORT_CONFIG, else ./idemport.yaml)")
	return c
}

// listFeeds prints each feed of the feeds file at configPath (or its
// default) with the last operation on its table.
func listFeeds(c *cobra.Command, e *env, output, configPath string) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	path, err := (&runFlags{config: configPath}).configPath(e)
	if err != nil {
		return err
	}
	all, err := loadFeeds(e, path, pflag.NewFlagSet("none", pflag.ContinueOnError))
	if err != nil {
		return err
	}
	now := time.Now()
	var lines []feedStatus
	for _, fr := range all {
		lines = append(lines, lastOutcome(c, fr, now))
	}
	if output == "json" {
		return writeJSON(e.stdout, lines...)
	}
	return writeTable(e.stdout, "no feeds", "FEED\tTABLE\tLAST\tROWS\tAGE\tFILE", lines, func(l feedStatus) []any {
		last, rows, age := orDash(l.Last), "-", "-"
		if l.Error != "" {
			last = "error: " + l.Error
		}
		if l.Rows != nil {
			rows = fmt.Sprint(*l.Rows)
		}
		if l.AgeS != nil {
			age = (time.Duration(*l.AgeS) * time.Second).String()
		}
		return []any{l.Feed, orDash(l.Table), last, rows, age, orDash(l.File)}
	})
}

// lastOutcome reads the last operation on fr's table in its target.
func lastOutcome(c *cobra.Command, fr *feedRun, now time.Time) feedStatus {
	l := feedStatus{Feed: fr.feed.Name, Table: fr.o.table, Target: fr.o.into.String(), Source: fr.feed.Source}
	for i, s := range l.Source {
		l.Source[i] = remote.Redact(s)
	}
	if l.Table == "" {
		return l
	}
	eng, err := fr.o.into.operator(c.Context(), pipeline.Options{ReadOnly: true, AllowMissing: true})
	if err != nil {
		l.Error = err.Error()
		return l
	}
	defer eng.Close()
	if !eng.Exists() {
		return l // no database yet: never imported
	}
	found, err := eng.Status(c.Context(), ledger.Filter{Table: l.Table})
	if err == nil { // status leaves undone operations out unless asked
		var undone []ops.OperationStatus
		undone, err = eng.Status(c.Context(), ledger.Filter{Table: l.Table, State: ledger.Undone})
		found = append(found, undone...)
	}
	if err != nil {
		l.Error = err.Error()
		return l
	}
	var last *ops.OperationStatus
	for i := range found {
		if last == nil || found[i].UpdatedAt > last.UpdatedAt {
			last = &found[i]
		}
	}
	if last == nil {
		return l
	}
	rows := last.Rows.Inserted + last.Rows.Updated + last.Rows.Unchanged + last.Rows.Stale + last.Rows.Superseded
	age := int64(now.Sub(time.UnixMilli(last.UpdatedAt)) / time.Second)
	l.Last, l.File, l.Rows, l.UpdatedAt, l.AgeS = string(last.State), last.Path, &rows, jsonTime(last.UpdatedAt), &age
	return l
}
