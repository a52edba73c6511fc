// Command idemport imports data files into a database exactly once in
// effect, however often it is run, killed, rerun or run in parallel.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/idemport/idemport/internal/english"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemport/idemport/internal/config"
	"github.com/idemport/idemport/internal/failpoint"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
)

// Exit codes. With several files, the most severe seen wins:
// failed > refused > conflict > busy > ok.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitConflict    = 3
	exitBusy        = 4
	exitRefused     = 5
	exitInterrupted = 130
)

func main() {
	// SIGINT and SIGTERM end a run cleanly: it rolls back the open
	// partition, releases its claims and exits 130. On Windows os.Interrupt
	// is Ctrl-C and Ctrl-Break, and SIGTERM is the console window closing,
	// the user logging off or the system shutting down (Windows then ends
	// the process after a few seconds, done or not).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	tuneGC(os.Getenv)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// env is what the command reads from its environment, here and nowhere
// else: the default target (IDEMPORT_INTO), the default event sinks
// (IDEMPORT_NOTIFY), the variables an event sink's address names as
// ${NAME}, and the failpoint switch for crash tests.
type env struct {
	stdout, stderr io.Writer
	failpoints     *failpoint.Set
	into           string // the default of --into
	notify         string // the sinks when no --notify is given, one per line
	getenv         func(string) string
	feed           *feedRun // the feed of --feed, once applyFeed read it
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fp, err := failpoint.Parse(getenv("IDEMPORT_FAILPOINT"))
	if err != nil {
		fmt.Fprintln(stderr, "idemport:", esc(err.Error()))
		return exitUsage
	}
	e := &env{stdout: stdout, stderr: stderr, failpoints: fp, into: getenv("IDEMPORT_INTO"), notify: getenv("IDEMPORT_NOTIFY"), getenv: getenv}
	if e.into == "" {
		e.into = pipeline.DefaultDSN
	}
	root := newRootCmd(e)
	allowed := envFlagNames(root)
	root.InitDefaultCompletionCmd(args...)
	usageArgs(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := envFlags(c.Flags(), getenv, allowed); err != nil {
			return err
		}
		return applyFeed(c, e)
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err = root.ExecuteContext(ctx)
	code := exitCode(ctx, err)
	if err != nil && !errors.As(err, new(outcomeError)) && !errors.As(err, new(dryRunError)) && code != exitInterrupted {
		for _, line := range errorLines(err) {
			fmt.Fprintln(stderr, "idemport:", esc(line))
		}
		if code == exitUsage && !errors.As(err, new(*pipeline.UsageError)) {
			path := root.CommandPath()
			if cmd, _, err := root.Find(args); err == nil {
				path = cmd.CommandPath()
			}
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
		}
	}
	return code
}

// errorLines is err's text, one line per mistake when it is a usage error
// joining several (those of a feeds file): each is escaped on its own.
func errorLines(err error) []string {
	var ue *pipeline.UsageError
	var u usageError
	if errors.As(err, &u) {
		if j, ok := u.error.(interface{ Unwrap() []error }); ok {
			var lines []string
			for _, e := range j.Unwrap() {
				lines = append(lines, errorLines(e)...)
			}
			return lines
		}
	}
	if errors.As(err, &ue) {
		if j, ok := ue.Err.(interface{ Unwrap() []error }); ok {
			var lines []string
			for _, e := range j.Unwrap() {
				lines = append(lines, errorLines(e)...)
			}
			return lines
		}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && errors.As(err, new(*config.Error)) {
		var lines []string
		for _, e := range j.Unwrap() {
			lines = append(lines, errorLines(e)...)
		}
		return lines
	}
	return []string{err.Error()}
}

// EnvName is the environment variable that sets the flag named flag when
// the command line does not: IDEMPORT_ and the name in capitals, with _
// for -, so --max-rejects is IDEMPORT_MAX_REJECTS.
func envName(flag string) string {
	return "IDEMPORT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envFlagNames are the flags the environment may set: those of run, which
// are import's and run's own (--config, --fail-fast). A command that takes
// one of them takes its variable too; the choices of one invocation of
// other commands (undo --forget, gc --older-than…) are not read from the
// environment. root is the command tree (newRootCmd), whose run command
// is read rather than a second one built.
func envFlagNames(root *cobra.Command) map[string]bool {
	names := map[string]bool{}
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			c.Flags().VisitAll(func(fl *pflag.Flag) { names[fl.Name] = true })
		}
	}
	delete(names, "help")
	return names
}

// envFlags sets every flag of fs among allowed that the command line left unset from
// its variable (envName), when that is set and not empty, so that the
// precedence is flag > environment > feeds file > default. A repeatable
// flag takes one value per line of its variable (as IDEMPORT_NOTIFY
// always has); a comma-separated one its commas, as on the command line.
// A value the flag refuses is a usage error naming the variable. Every
// flag it sets counts as changed.
func envFlags(fs *pflag.FlagSet, getenv func(string) string, allowed map[string]bool) error {
	var errs []error
	fs.VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || !allowed[fl.Name] {
			return
		}
		name := envName(fl.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok && fl.Value.Type() == "stringArray" {
			var vals []string
			for _, l := range strings.Split(v, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					vals = append(vals, l)
				}
			}
			if err := sv.Replace(vals); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			fl.Changed = true
			return
		}
		if err := fs.Set(fl.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	})
	if len(errs) > 0 {
		return usageError{errors.Join(errs...)}
	}
	return nil
}

// outcomeError carries the results of an import to exitCode. Their text was
// already printed.
type outcomeError struct {
	results []*pipeline.Result
}

func (e outcomeError) Error() string {
	return english.Plural(int64(len(e.results)), "file") + " did not import cleanly"
}

// usageError marks bad flags or arguments.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitCode is the one place where errors become exit codes.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil {
		return exitInterrupted
	}
	var oe outcomeError
	if errors.As(err, &oe) {
		code := exitOK
		for _, r := range oe.results {
			code = mostSevere(code, resultCode(r))
		}
		return code
	}
	var dry dryRunError
	if errors.As(err, &dry) {
		return dry.code
	}
	if errors.As(err, new(*pipeline.UsageError)) || errors.As(err, new(usageError)) {
		return exitUsage
	}
	if errors.As(err, new(refusedError)) {
		return exitRefused
	}
	if errors.As(err, new(verifyBusyError)) || errors.As(err, new(*pipeline.BusyError)) {
		return exitBusy
	}
	return exitFailed
}

// resultCode is the exit code of one file's result.
func resultCode(r *pipeline.Result) int {
	if r.Outcome == pipeline.Failed && errors.As(r.Err, new(*pipeline.UsageError)) {
		return exitUsage
	}
	if r.Clean() {
		return exitOK
	}
	switch r.Outcome {
	case pipeline.Conflict:
		return exitConflict
	case pipeline.Busy:
		return exitBusy
	case pipeline.Refused:
		return exitRefused
	case pipeline.Interrupted:
		return exitInterrupted
	}
	return exitFailed
}

// severity orders exit codes: 1 > 5 > 3 > 4 > 0 (and 2 above all).
func severity(code int) int {
	switch code {
	case exitUsage:
		return 6
	case exitFailed:
		return 5
	case exitRefused:
		return 4
	case exitConflict:
		return 3
	case exitBusy:
		return 2
	}
	return 0
}

func mostSevere(a, b int) int {
	if severity(b) > severity(a) {
		return b
	}
	return a
}

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "idemport",
		Short: "Import data files into a database exactly once in effect",
		Long: `idemport imports CSV, TSV, JSONL, Parquet and Arrow files (plain, gzip or zstd) and Excel
sheets into SQLite (the default, ./idemport.db), PostgreSQL or MariaDB exactly once in effect:
rerun it, kill it, run it twice at once — the target ends up as one clean run would leave it,
and a rerun of a finished file does nothing and says so.

Exit codes: 0 done; 1 failed (rerun to resume); 2 usage error; 3 conflict; 4 busy;
5 refused; 130 interrupted.`,
		Version:       versionText(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(
		newImportCmd(e),
		newRunCmd(e),
		newFeedsCmd(e),
		newStatusCmd(e),
		newHistoryCmd(e),
		newPlanCmd(e),
		newRejectsCmd(e),
		newVerifyCmd(e),
		newGCCmd(e),
		newUndoCmd(e),
		newOutboxCmd(e),
		newVersionCmd(e),
	)
	return root
}

// usageArgs makes every usage error of c and the commands below it exit 2:
// cobra's argument checks return plain errors, so each is wrapped as a
// usageError; and a command that only groups others (root, rejects,
// completion) refuses an unknown subcommand instead of printing its help.
// Called once the command tree is complete.
func usageArgs(c *cobra.Command) {
	if !c.Runnable() && c.HasSubCommands() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownCommand(c, args[0])
		}
	}
	if check := c.Args; check != nil {
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// unknownCommand is the usage error for a subcommand c does not have, with
// cobra's suggestions for a misspelling.
func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, set only on its own path
	}
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError{errors.New(msg)}
}

// newHelpCmd is "idemport help [COMMAND]": like cobra's own, except that
// an unknown topic is a usage error.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if cmd == nil {
				cmd = c.Root()
			}
			if err != nil || len(rest) > 0 {
				name := strings.Join(args, " ")
				if len(rest) > 0 {
					name = rest[0]
				}
				return unknownCommand(cmd, name)
			}
			return cmd.Help()
		},
	}
}

// logFlags are the flags shared by commands that log.
type logFlags struct {
	format string
	level  string
}

func (l *logFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&l.format, "log-format", "text", "log format on stderr: text or json")
	c.Flags().StringVar(&l.level, "log-level", "warn", "least severe level logged: debug, info, warn or error")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want text or json", l.format)}
}

// target is the database a command works on: --into and --state-schema.
type target struct {
	dsn         string // --into
	fallback    string // $IDEMPORT_INTO, else ./idemport.db: when --into is absent
	stateSchema string
}

// resolved is the target's DSN: --into, else its fallback.
func (t target) resolved() string {
	if t.dsn != "" {
		return t.dsn
	}
	return t.fallback
}

// String names the target as users may see it: passwords masked.
func (t target) String() string { return pipeline.Redact(t.resolved()) }

func (t target) open(ctx context.Context, o pipeline.Options) (*pipeline.Engine, error) {
	o.StateSchema = t.stateSchema
	return pipeline.Open(ctx, t.resolved(), o)
}

// operator opens the target for the operator's commands (package ops), as
// open does for imports.
func (t target) operator(ctx context.Context, o pipeline.Options) (*ops.Operator, error) {
	o.StateSchema = t.stateSchema
	return ops.Open(ctx, t.resolved(), o)
}

// intoFlag registers --into, whose default is $IDEMPORT_INTO, else
// ./idemport.db, and --state-schema. The default is not printed in the
// help: the environment's DSN may hold a password.
func (e *env) intoFlag(c *cobra.Command, into *target) {
	into.fallback = e.into
	c.Flags().StringVar(&into.dsn, "into", "", "target database: a SQLite path (sqlite://PATH, sqlite:PATH, file:PATH or a bare path), PostgreSQL (postgres://…, postgresql://… or a libpq key=value string; PG* variables fill what it leaves out), or MariaDB (mysql://… or mariadb://…) (default $IDEMPORT_INTO, else ./idemport.db)")
	c.Flags().StringVar(&into.stateSchema, "state-schema", pipeline.DefaultStateSchema, "PostgreSQL schema of idemport's ledger and checkpoints")
}

func outputFlag(c *cobra.Command, output *string) {
	c.Flags().StringVarP(output, "output", "o", "text", "output format: text or json")
}

func checkOutput(output string) error {
	if output != "text" && output != "json" {
		return usageError{fmt.Errorf("--output %q: want text or json", output)}
	}
	return nil
}
