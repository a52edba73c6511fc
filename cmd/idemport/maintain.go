package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/english"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/ops"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// mappingFlags registers the flags that say which operation a file is and
// how it is read, shared by import, plan and verify.
func mappingFlags(e *env, c *cobra.Command, o *importOptions) {
	f := c.Flags()
	e.intoFlag(c, &o.into)
	f.StringVar(&o.table, "table", "", "target table (default: the file's name without extensions)")
	stringSliceVar(f, &o.key, "key", "natural key columns, comma-separated (default: rows are keyed by their place in the file)")
	f.StringVar(&o.versionCol, "version-col", "", "with --key: apply a row only if this column is not older than the stored one")
	f.StringVar(&o.fileID, "file-id", "", "the file's identity, or a template of it with {name}, {stem}, {path}, {digest} (default: its content digest)")
	stringArrayVar(f, &o.columns, "column", "fix a column's type, as name:type (repeatable); types: "+idemtype.TypeNames)
	f.BoolVar(&o.noHeader, "no-header", false, "the CSV/TSV file has no header: its first line is data (columns column1…columnN, or named by --columns)")
	stringSliceVar(f, &o.names, "columns", "name the CSV/TSV file's columns by position, comma-separated: one name per column, replacing the header's")
	stringArrayVar(f, &o.rename, "rename", "import the file's column OLD as NEW, as OLD=NEW (repeatable); --key, --column and --version-col use the new name")
	stringSliceVar(f, &o.selects, "select", "import only these columns of the file (as it names them), comma-separated, in this order; the others are ignored")
	f.IntVar(&o.skipLines, "skip-lines", 0, "lines before the header (or the first row, with --no-header) that are not part of the table, such as a title; the first rows of a Parquet or Arrow file")
	stringArrayVar(f, &o.nulls, "null", `an unquoted CSV/TSV value that means NULL, such as \N, NULL or NA (repeatable); an unquoted empty value always does, a quoted one never`)
	f.StringVar(&o.encoding, "encoding", "", "the encoding a CSV, TSV or JSONL file is written in, by its WHATWG name: windows-1252 (latin1), iso-8859-15, shift_jis, gb18030, utf-16le…; default UTF-8 (a UTF-8 or UTF-16 byte order mark decides by itself)")
	f.StringVar(&o.name, "name", "", "the name a stream (- for standard input, a pipe or FIFO) is known by in the ledger and results, and whose extension gives its format (default stdin: give --format)")
	f.StringVar(&o.sheet, "sheet", "", "the sheet of an Excel workbook (.xlsx) to import (default its first)")
	f.StringVar(&o.format, "format", "", "file format: csv, tsv, jsonl, parquet, arrow (IPC file), arrows (IPC stream) or xlsx; default: by extension")
	f.StringVar(&o.delimiter, "delimiter", "", "CSV/TSV field delimiter, one character (default , for CSV, tab for TSV)")
	f.BoolVar(&o.quotes, "quotes", false, "process double quotes in TSV files (CSV always does)")
	f.StringVar(&o.evolve, "evolve", "none", "when an existing table does not fit the file: none refuses it (exit 5), add adds its new columns, widen also widens int64 → decimal → text and float64 → text")
	f.BoolVar(&o.atomic, "atomic", false, "readers see all of the file's rows or none: partitions go to a staging table, moved into the table when the import completes")
	f.BoolVar(&o.snapshot, "snapshot", false, "the file is the table's whole content (with --key: its whole set of keys): rows it lacks are deleted when it completes")
	f.StringVar(&o.deleteMode, "delete", "hard", "with --snapshot: hard deletes missing rows, soft marks them in _idemport_deleted_at")
	stringArrayVar(f, &o.scope, "snapshot-scope", "with --snapshot: sweep only the rows with COLUMN=VALUE (repeatable), e.g. one region's feed")
	o.remote.register(c)
	o.partitionRows, o.lease, o.trigger, o.workers, o.wait, o.maxRejects = 100000, pipeline.DefaultLease, pipeline.DefaultTrigger, 1, "0", "0"
	o.partBytes = english.Bytes(reader.DefaultPartitionBytes)
}

// verifyError is a difference verify found (exit 1).
type verifyError struct{ n int }

func (e verifyError) Error() string {
	if e.n == 1 {
		return "1 file does not match the ledger"
	}
	return fmt.Sprintf("%d files do not match the ledger", e.n)
}

// verifyBusyError is a file verify could not check because a live import
// holds it (exit 4).
type verifyBusyError struct{ n int }

func (e verifyBusyError) Error() string {
	if e.n == 1 {
		return "1 file is being imported: verify it once the import ends"
	}
	return fmt.Sprintf("%d files are being imported: verify them once the imports end", e.n)
}

// lookupFlags are the mapping flags a verify without them finds in the
// ledger (the mapping its import recorded) instead of taking from the
// command line. --table and --file-id narrow the lookup.
var lookupFlags = []string{"key", "version-col", "column", "no-header", "columns", "rename", "select", "skip-lines",
	"null", "encoding", "name", "sheet", "format", "delimiter", "quotes", "evolve", "atomic", "snapshot", "delete", "snapshot-scope"}

func newVerifyCmd(e *env) *cobra.Command {
	o := &importOptions{}
	c := &cobra.Command{
		Use:   "verify [flags] FILE...",
		Short: "Check a file against the ledger and the target",
		Long: `Verify re-hashes each FILE, compares its content and mapping with the ledger, and recounts
its rows in the target: in ordinal mode the rows whose lineage is the file, with --key the
file's keys present in the table. With --key it also compares values: each row the file last
wrote must hold the values of the file's last occurrence of its key (with --version-col, the
newest), as the database stores them.

Without mapping flags (--key, --column, --format…) verify finds the file's import in the
ledger, by its content and else by its path, as history does, and checks it with the mapping
it was imported with; --table and --file-id narrow the search. When the file went to several
tables, verify lists them and exits 2: choose one with --table. With mapping flags, it checks
the import those flags name, as import would identify it.

It exits 1 on any difference, 0 when everything matches, and writes nothing. A difference
import --reapply repairs is followed by that command (next:). A file another import is
importing right now is not checked: verify names that import and exits 4 (busy).`,
		Example: `  idemport verify orders.csv
  idemport verify --table orders day1.csv day2.csv
  idemport verify --table orders --key order_id day1.csv   # the import these flags name
  idemport verify --feed orders            # the feed's files, with its target and mapping`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error { return runVerify(c, e, o, args) },
	}
	mappingFlags(e, c, o)
	outputFlag(c, &o.output)
	feedFlag(c)
	return c
}

// runVerify verifies each of args (or the files of --feed) and prints a
// report of each; the error is the most severe finding.
func runVerify(c *cobra.Command, e *env, o *importOptions, args []string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if len(args) == 0 {
		var err error
		if args, err = feedFiles(c, e); err != nil {
			return err
		}
		if len(args) == 0 {
			return usageError{errors.New("verify needs at least one FILE, or --feed NAME to verify the feed's files")}
		}
	}
	lookup := e.feed == nil
	for _, name := range lookupFlags {
		if c.Flags().Changed(name) {
			lookup = false
		}
	}
	op, err := existingOperator(c, o.into)
	if err != nil {
		return err
	}
	defer op.Close()
	bad, ambiguous, busy := 0, 0, 0
	for _, path := range args {
		rep, err := verifyFile(c, o, op, path, lookup, &ambiguous, &busy)
		if err != nil {
			return err
		}
		if len(rep.Differences) > 0 && rep.State != "ambiguous" {
			bad++
		}
		if err := writeVerify(e, o.output, path, rep); err != nil {
			return err
		}
	}
	if ambiguous > 0 {
		return &pipeline.UsageError{Err: fmt.Errorf("%s several imports: choose one with a command shown", english.Verb(ambiguous, "1 file matches", fmt.Sprintf("%d files match", ambiguous)))}
	}
	if bad > 0 {
		return verifyError{bad}
	}
	if busy > 0 {
		return verifyBusyError{busy}
	}
	return nil
}

// verifyFile verifies the file at path, with the mapping its import
// recorded when lookup says so and one is found, and returns its report,
// counting the files that match several imports and those being imported.
func verifyFile(c *cobra.Command, o *importOptions, op *ops.Operator, path string, lookup bool, ambiguous, busy *int) (*ops.VerifyReport, error) {
	req, err := o.request(path)
	if err != nil {
		return nil, err
	}
	var rep *ops.VerifyReport
	var mapping []string // the flags of the mapping found in the ledger
	if lookup {
		if rep, mapping, err = verifyLookup(c, o, op, path, &req, ambiguous); err != nil {
			return nil, err
		}
	}
	if rep == nil {
		if rep, err = op.Verify(c.Context(), req); err != nil {
			return nil, err
		}
		if rep.Reapply {
			rep.Next = reapplyCommand(c, path, mapping)
		}
		if rep.Busy != "" {
			*busy++
			rep.Next = "verify it again once that import ends: " + strings.Join(append(append([]string{"idemport", "verify"}, givenFlags(c, true)...), shellWord(remote.Redact(path))), " ")
		}
	}
	return rep, nil
}

// verifyLookup finds the import of path in the ledger: when there is one,
// it sets req's file ID and mapping to that import's and returns the
// mapping's flags; when there is none, or several (counted in ambiguous),
// it returns the report that says so. A stream is verified by req as given.
func verifyLookup(c *cobra.Command, o *importOptions, op *ops.Operator, path string, req *pipeline.Request, ambiguous *int) (*ops.VerifyReport, []string, error) {
	var rep *ops.VerifyReport
	var mapping []string
	recorded, ok, err := op.Recorded(c.Context(), path, o.table, o.fileID)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !ok: // a stream: verified by the flags given
	case len(recorded) == 0:
		rep = notRecorded(c, path, o.table)
	case len(recorded) == 1:
		found, err := pipeline.RequestFor(recorded[0], path)
		if err != nil {
			return nil, nil, err
		}
		req.FileID, req.Mapping = found.FileID, found.Mapping
		mapping = mappingWords(found.Mapping, recorded[0].FileID, recorded[0].ContentDigest)
	default:
		*ambiguous++
		rep = candidates(c, path, recorded)
	}
	return rep, mapping, nil
}

// writeVerify prints rep, the report of the file at path, as a JSON line
// or as text.
func writeVerify(e *env, output, path string, rep *ops.VerifyReport) error {
	if output == "json" {
		if rep.Differences == nil {
			rep.Differences = []string{} // an empty list, not null
		}
		return writeJSON(e.stdout, rep)
	}
	switch {
	case rep.State == "ambiguous":
		textf(e.stdout, "%s: matches %d imports; verify one of them:\n", remote.Redact(path), len(rep.Candidates))
		for _, cand := range rep.Candidates {
			textf(e.stdout, "  %s ← %s: %s\n", cand.Table, cand.FileID, cand.Command)
		}
	case rep.Busy != "":
		textf(e.stdout, "%s: %s\n  next: %s\n", remote.Redact(path), rep.Busy, rep.Next)
	case len(rep.Differences) == 0:
		textf(e.stdout, "%s: ok: %s holds all %s, content %s\n", remote.Redact(path), rep.Table, english.Plural(rep.Found, "row"), rep.ContentDigest)
	default:
		writeDifferences(e, path, rep)
	}
	return nil
}

// writeDifferences prints the differences verify found in the file at
// path, the first values that differ, and the command that repairs them.
func writeDifferences(e *env, path string, rep *ops.VerifyReport) {
	textf(e.stdout, "%s: DIFFERS: %s\n", remote.Redact(path), strings.Join(rep.Differences, "; "))
	for _, d := range rep.Values {
		textf(e.stdout, "  %s: %s is %s, the file's is %s\n", keyText(rep.Key, d.KeyValues), d.Column, sqlText(d.Stored), sqlText(d.File))
	}
	if n := rep.DifferingRows; n > 0 && int64(len(rep.Values)) < n {
		textf(e.stdout, "  (the first %d differences shown, of %s)\n", len(rep.Values), english.Plural(n, "row"))
	}
	if rep.Next != "" {
		textf(e.stdout, "  next: %s\n", rep.Next)
	}
}

// notRecorded is the report of a file verify found no import of.
func notRecorded(c *cobra.Command, path, table string) *ops.VerifyReport {
	where := ""
	if table != "" {
		where = " into " + table
	}
	rep := &ops.VerifyReport{File: path, Table: table, State: "unknown",
		Differences: []string{fmt.Sprintf("the ledger has no import of %s%s, by its content or by its path (was it imported into another database, or with --file-id?)", remote.Redact(path), where)}}
	words := append([]string{"idemport", "import"}, givenFlags(c, true)...)
	rep.Next = strings.Join(append(words, shellWord(remote.Redact(path))), " ")
	return rep
}

// candidates is the report of a file that matches several imports: each
// with the verify that chooses it.
func candidates(c *cobra.Command, path string, found []ledger.Operation) *ops.VerifyReport {
	rep := &ops.VerifyReport{File: path, State: "ambiguous",
		Differences: []string{fmt.Sprintf("matches %d imports: choose one", len(found))}}
	tables := map[string]int{}
	for _, op := range found {
		tables[op.Table]++
	}
	for _, op := range found {
		words := append([]string{"idemport", "verify"}, givenFlags(c, false)...)
		words = append(words, "--table", shellWord(op.Table))
		if tables[op.Table] > 1 {
			words = append(words, "--file-id", shellWord(op.FileID))
		}
		rep.Candidates = append(rep.Candidates, ops.Candidate{Table: op.Table, FileID: op.FileID,
			Command: strings.Join(append(words, shellWord(remote.Redact(path))), " ")})
	}
	return rep
}

// keyText is a row's key as column=value, in the key's order.
func keyText(columns, values []string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = v
		if i < len(columns) {
			parts[i] = columns[i] + "=" + v
		}
	}
	return strings.Join(parts, ", ")
}

// sqlText shows a stored value: quoted text, or NULL.
func sqlText(v *string) string {
	if v == nil {
		return "NULL"
	}
	return strconv.Quote(*v)
}

// mappingWords spells m as the flags that give it, for a command that must
// identify the file as its import did (with --file-id fileID unless that
// is the content digest, the default).
func mappingWords(m pipeline.Mapping, fileID, contentDigest string) []string {
	var w flagWords
	w.identity(m, fileID, contentDigest)
	w.reading(m)
	w.writing(m)
	return w
}

// flagWords are the words of command-line flags, each value quoted for a
// shell.
type flagWords []string

// flag adds --name and one of values, for each of them.
func (w *flagWords) flag(name string, values ...string) {
	for _, v := range values {
		*w = append(*w, "--"+name, shellWord(v))
	}
}

// identity adds the flags of what identifies the import of m: its table,
// file ID, key, version column and column types.
func (w *flagWords) identity(m pipeline.Mapping, fileID, contentDigest string) {
	w.flag("table", m.Table)
	if fileID != contentDigest {
		w.flag("file-id", fileID)
	}
	w.flag("key", csvWords(m.Key)...)
	if m.Version != "" {
		w.flag("version-col", m.Version)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Columns)) {
		w.flag("column", name+":"+m.Columns[name].String())
	}
}

// reading adds the flags of how m reads the file.
func (w *flagWords) reading(m pipeline.Mapping) {
	if m.Format != "" {
		w.flag("format", string(m.Format))
	}
	switch m.Delimiter {
	case 0:
	case '\t':
		w.flag("delimiter", "tab")
	default:
		w.flag("delimiter", string(rune(m.Delimiter)))
	}
	if m.Quotes {
		*w = append(*w, "--quotes")
	}
	if m.SkipLines > 0 {
		w.flag("skip-lines", strconv.Itoa(m.SkipLines))
	}
	if m.NoHeader {
		*w = append(*w, "--no-header")
	}
	w.flag("columns", csvWords(m.Names)...)
	w.flag("select", csvWords(m.Select)...)
	for _, old := range slices.Sorted(maps.Keys(m.Rename)) {
		w.flag("rename", old+"="+m.Rename[old])
	}
	w.flag("null", m.Null...)
	if m.Encoding != "" {
		w.flag("encoding", m.Encoding)
	}
	if m.Sheet != "" {
		w.flag("sheet", m.Sheet)
	}
}

// writing adds the flags of how m writes the table.
func (w *flagWords) writing(m pipeline.Mapping) {
	if m.Evolve != "" {
		w.flag("evolve", m.Evolve)
	}
	if m.Atomic {
		*w = append(*w, "--atomic")
	}
	if s := m.Snapshot; s != nil {
		*w = append(*w, "--snapshot")
		if s.Soft {
			w.flag("delete", "soft")
		}
		for _, t := range s.Scope {
			w.flag("snapshot-scope", t.Column+"="+t.Value)
		}
	}
}

// csvWords quotes names for a comma-separated flag as encoding/csv reads
// them.
func csvWords(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n
		if strings.ContainsAny(n, ",\"\n") {
			out[i] = `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
		}
	}
	return out
}

// givenFlags spells the flags this command was given that are not its
// output or feed (a DSN that holds a secret given as "$IDEMPORT_INTO"):
// with mapping, all of them; without, none that names the import
// (--table, --file-id), which the caller spells.
func givenFlags(c *cobra.Command, mapping bool) []string {
	var words []string
	c.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "output", "feed":
			return
		case "table", "file-id":
			if !mapping {
				return
			}
		}
		if f.Value.Type() == "bool" {
			words = append(words, "--"+f.Name+"="+f.Value.String())
			return
		}
		values := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			values = sv.GetSlice()
		}
		for _, v := range values {
			if f.Name == "into" && pipeline.Redact(v) != v {
				// A DSN with a secret (a password, query values) is never
				// shown: the command reads it from the environment.
				words = append(words, "--into", `"$IDEMPORT_INTO"`)
				continue
			}
			words = append(words, "--"+f.Name, shellWord(v))
		}
	})
	return words
}

// reapplyCommand is the import that restores the rows of path that verify
// found missing or changed: import --reapply with the target and mapping
// flags this verify was given, or with the mapping it found in the ledger
// (mapping, spelled by mappingWords) when it was given none.
func reapplyCommand(c *cobra.Command, path string, mapping []string) string {
	words := append([]string{"idemport", "import", "--reapply"}, givenFlags(c, mapping == nil)...)
	words = append(words, mapping...)
	return strings.Join(append(words, shellWord(remote.Redact(path))), " ")
}

// shellWord quotes s for a POSIX shell where it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// parseAge reads a positive duration that may be given in days: 90d, 12h,
// 1d12h.
func parseAge(s string) (time.Duration, error) {
	total, err := parseDuration(s)
	if err != nil {
		return 0, err
	}
	if total <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration", s)
	}
	return total, nil
}

// gcOptions are the flags of gc.
type gcOptions struct {
	into          target
	output, older string
	dryRun        bool
}

func newGCCmd(e *env) *cobra.Command {
	o := &gcOptions{}
	c := &cobra.Command{
		Use:   "gc --older-than AGE",
		Short: "Drop bulky detail of old completed imports, keeping their identity",
		Long: `GC drops, for imports completed longer than AGE ago, their stored plans, per-partition rows
and the raw values and rows of their rejects. It keeps what proves a file was imported —
operation, fingerprint, state, counts, stored outcome, attempts, rejects' ordinals and
reasons — so rerunning an old file is still a duplicate. Imports that are not completed are
never touched. After gc, rejects of those imports can no longer be exported or replayed.
Outbox events older than AGE that every sink has received (or that are owed to no sink) are
deleted; events still pending or refused by a sink are kept.`,
		Example: `  idemport gc --older-than 90d
  idemport gc --older-than 30d --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return runGC(c, e, o) },
	}
	e.intoFlag(c, &o.into)
	outputFlag(c, &o.output)
	c.Flags().StringVar(&o.older, "older-than", "90d", "age of completed imports to trim, e.g. 90d or 36h")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "report what would be removed, remove nothing")
	feedFlag(c)
	return c
}

// runGC runs gc and prints its report.
func runGC(c *cobra.Command, e *env, o *gcOptions) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	age, err := parseAge(o.older)
	if err != nil {
		return usageError{fmt.Errorf("--older-than %v", err)}
	}
	eng, err := o.into.operator(c.Context(), pipeline.Options{})
	if err != nil {
		return err
	}
	defer eng.Close()
	rep, err := eng.GC(c.Context(), age, o.dryRun)
	if err != nil {
		return err
	}
	if o.output == "json" {
		type gcJSON struct {
			*ops.GCReport
			Cutoff string `json:"cutoff"` // RFC 3339, whole seconds
		}
		return writeJSON(e.stdout, gcJSON{rep, jsonTime(rep.Cutoff.UnixMilli())})
	}
	return gcText(e, rep, o.dryRun)
}

// gcText prints what gc removed, or would remove with dryRun.
func gcText(e *env, rep *ops.GCReport, dryRun bool) error {
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	_, err := fmt.Fprintf(e.stdout, "gc %s the detail of %s completed before %s: %s, %s, %s; their identity is kept\n",
		verb, english.Plural(rep.Operations, "operation"), rep.Cutoff.Format(time.RFC3339), english.Plural(rep.Plans, "plan"),
		english.Plural(rep.Partitions, "partition row"), english.Plural(rep.RejectPayloads, "reject payload"))
	if err == nil && rep.Events > 0 {
		_, err = fmt.Fprintf(e.stdout, "gc %s %s delivered before %s\n", verb, english.Plural(rep.Events, "outbox event"), rep.Cutoff.Format(time.RFC3339))
	}
	if err == nil && len(rep.Dropped) > 0 {
		_, err = textf(e.stdout, "gc %s the staging and key tables of %s that will not complete: %s\n", verb, english.Plural(len(rep.Dropped), "import"), strings.Join(rep.Dropped, ", "))
	}
	return err
}
