package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/config"
	"github.com/idemport/idemport/pipeline"
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
		fr := &feedRun{feed: feed, o: fo}
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
func overlayFlags(fs, from *pflag.FlagSet) {
	from.Visit(func(fl *pflag.Flag) {
		to := fs.Lookup(fl.Name)
		if to == nil {
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
	path, err := r.configPath(e)
	if err != nil {
		return err
	}
	all, err := loadFeeds(e, path, c.Flags())
	if err != nil {
		return err
	}
	feeds, err := selectFeeds(all, names, path)
	if err != nil {
		return err
	}
	progress := o.progress
	if o.quiet && !c.Flags().Changed("progress") {
		progress = "never"
	}
	ui, err := newProgressUI(e.stderr, progress)
	if err != nil {
		return err
	}
	log, err := o.logs.logger(ui)
	if err != nil {
		return err
	}
	ctx := c.Context()
	targets := &targetSet{e: e, log: log}
	defer func() { targets.close(run.eng) }() // run.eng is withMetrics' to close
	var b *batch
	var bad []*pipeline.Result
	for i, fr := range feeds {
		if ctx.Err() != nil {
			break
		}
		if r.failFast && len(bad) > 0 {
			rest := make([]string, 0, len(feeds)-i)
			for _, f := range feeds[i:] {
				rest = append(rest, f.feed.Name)
			}
			textf(e.stderr, "idemport: --fail-fast: not run: %s\n", strings.Join(rest, ", "))
			break
		}
		fr.o.output, fr.o.quiet = o.output, o.quiet
		reqs, err := fr.requests(ctx)
		if err == nil && len(reqs) == 0 {
			shown := make([]string, len(fr.feed.Source))
			for i, a := range fr.feed.Source {
				shown[i] = remote.Redact(a)
			}
			textf(e.stderr, "idemport: feed %s: no files to import in %s\n", fr.feed.Name, strings.Join(shown, " "))
			continue
		}
		if err == nil && o.dryRun {
			if err = dryRun(c, e, fr.o, reqs); err == nil {
				continue
			}
		}
		var t *openTarget
		if err == nil {
			t, err = targets.open(ctx, fr.o)
		}
		if err != nil {
			// The feed stops before its first file: one failed result
			// says why, and the other feeds go on.
			res := feedFailure(fr, err)
			if b == nil {
				b = &batch{e: e, o: o, ui: ui}
			}
			if err := b.record(fr.feed.Name, res); err != nil {
				return err
			}
			bad = append(bad, res)
			continue
		}
		if run.eng == nil {
			run.eng = t.eng
		}
		if b == nil {
			b = &batch{e: e, o: o, ui: ui}
		}
		b.eng, b.sinks, b.notifyBudget, b.notified, b.delivered = t.eng, t.sinks, fr.o.notify.timeout, pipeline.DeliveryReport{}, false
		feedBad, err := b.importEach(ctx, reqs, fr.feed.Name)
		bad = append(bad, feedBad...)
		if err != nil {
			return err
		}
		if len(t.sinks) > 0 {
			reportDelivery(e, b.notified)
		}
	}
	if b != nil {
		run.results, run.feeds = b.results, b.feeds
		if o.output == "text" && len(b.results) > 1 && !o.quiet {
			fmt.Fprintln(e.stdout, summary(b.results))
		}
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case len(bad) > 0:
		return outcomeError{results: bad}
	}
	return nil
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
	files, err := expandArgs(fr.feed.Source, fr.o.format, func(prefix string) ([]string, error) {
		return fr.o.remote.client().List(ctx, prefix, fr.o.remote.glob)
	})
	if err != nil {
		return nil, err
	}
	if fr.o.fileID != "" && len(files) > 1 && !pipeline.FileIDVaries(fr.o.fileID) {
		return nil, usageError{fmt.Errorf("--file-id names one file, but %d were given (a template such as 'orders/{name}' names each)", len(files))}
	}
	reqs := make([]pipeline.Request, len(files))
	for i, f := range files {
		reqs[i] = fr.base
		reqs[i].Path = f
	}
	return reqs, nil
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
