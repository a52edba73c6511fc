package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// Mapping is what the user intends for a file: where its rows go and how to
// read them. Its digest is part of an operation's fingerprint. Partition
// size, workers, limits and output settings are not part of it.
type Mapping struct {
	// Table is the target table; empty means one named after the file.
	Table string
	// Key lists natural key columns; empty means rows are keyed by their
	// ordinal in the file.
	Key []string
	// Version is the column that orders versions of a natural-key row.
	Version string
	// Columns fixes the types of the named columns.
	Columns map[string]idemtype.Type
	// Format overrides detection by extension.
	Format reader.Format
	// Delimiter separates CSV/TSV fields; 0 means the format's default.
	Delimiter byte
	// Quotes turns on quote processing for TSV.
	Quotes bool
	// SkipLines is how many lines before the header (or the first data
	// row) are not part of the table: a report's title.
	SkipLines int
	// NoHeader says a CSV or TSV file has no header: its first line is
	// data.
	NoHeader bool
	// Names names a CSV or TSV file's columns by position (--columns),
	// replacing its header's names or naming those of a file without one.
	Names []string
	// Select lists the only columns of the file that are imported, by
	// their names in the file (after Names).
	Select []string
	// Rename renames columns of the file (by their names in the file,
	// after Names). Key, Version, Columns and the snapshot's scope name
	// columns as renamed.
	Rename map[string]string
	// Encoding is the canonical name (reader.EncodingName) of the
	// encoding a text file is written in; "" or "utf-8" is UTF-8.
	Encoding string
	// Sheet names the sheet of an Excel workbook to import; "" means its
	// first.
	Sheet string
	// Null lists the markers that stand for NULL in a CSV or TSV file (or
	// a sheet), unquoted: \N, NULL, NA.
	Null []string
	// Evolve is what an import may change in an existing table that does
	// not fit the file: EvolveNone, EvolveAdd or EvolveWiden.
	Evolve string
	// Atomic stages the file's rows and moves them into the table in the
	// transaction that completes the operation: readers see all of the
	// file or none of it.
	Atomic bool
	// Snapshot, when not nil, makes the file the whole content of the
	// table, or of the snapshot's scope: rows it does not have are swept.
	Snapshot *Snapshot
}

// Check reports, as a *UsageError, options of the mapping that do not go
// together, before any file is read: callers that take many mappings at
// once (the feeds of idemport.yaml) check them all before anything runs.
// Import checks it too.
func (m Mapping) Check() error {
	if m.Version != "" && len(m.Key) == 0 {
		return usagef("a version column needs --key: without a natural key a row only ever comes from one file")
	}
	return nil
}

// Snapshot says how a snapshot import treats the rows a file does not
// have. It is part of the mapping: it changes what lands.
type Snapshot struct {
	// Soft marks missing rows in the _idemport_deleted_at column instead
	// of deleting them.
	Soft bool
	// Scope limits the sweep to the rows with these column values.
	Scope []sink.Term
	// legacy makes ScopeText spell the scope unescaped, as versions
	// before escaping did (see legacyScopeText).
	legacy bool
}

// scopeEscaper escapes the characters that separate a scope's terms and
// their parts, and the escape character itself.
var scopeEscaper = strings.NewReplacer("%", "%25", "&", "%26", "=", "%3D")

// ScopeText is the canonical text of the snapshot's scope: its terms,
// sorted, as COLUMN=VALUE joined by '&', with '%', '&' and '=' in columns
// and values escaped as %25, %26 and %3D (so a=x&b=2 as one value of a is
// a=x%26b%3D2, and not the two terms a=x and b=2); "" for the whole
// table. A scope without those characters is spelt as it always was.
func (s *Snapshot) ScopeText() string {
	if s == nil {
		return ""
	}
	if s.legacy {
		return s.legacyScopeText()
	}
	terms := make([]string, len(s.Scope))
	for i, t := range s.Scope {
		terms[i] = scopeEscaper.Replace(t.Column) + "=" + scopeEscaper.Replace(t.Value)
	}
	sort.Strings(terms)
	return strings.Join(terms, "&")
}

// legacyScopeText is the scope as versions before escaping spelt it, in
// their mapping digests and snapshot records: terms unescaped, so that
// scopes that differ only in where '&' and '=' fall are spelt alike. A
// record or mapping under it is taken as this scope's.
func (s *Snapshot) legacyScopeText() string {
	if s == nil {
		return ""
	}
	terms := make([]string, len(s.Scope))
	for i, t := range s.Scope {
		terms[i] = t.Column + "=" + t.Value
	}
	sort.Strings(terms)
	return strings.Join(terms, "&")
}

// scopeTexts lists the spellings a scope's snapshots may be recorded
// under: its ScopeText, and its legacy text when that differs.
func (s *Snapshot) scopeTexts() []string {
	texts := []string{s.ScopeText()}
	if old := s.legacyScopeText(); old != texts[0] {
		texts = append(texts, old)
	}
	return texts
}

// canonicalMapping is the versioned, stable form of a Mapping that is
// hashed and stored with each operation (store.Mapping).
type canonicalMapping = store.Mapping

type canonicalSnapshot = store.MappingSnapshot

// MappingVersion is the version of the canonical mapping new imports
// record. Version 2 infers ISO dates as date and timestamps without a
// zone as timestamp (without time zone), where version 1 kept the first
// as text and took the second as UTC points in time. A file imported
// under version 1 keeps its identity: the version 1 digest of the same
// mapping is equivalent (see identifier.fingerprint).
const MappingVersion = 2

// canonical returns the canonical JSON of m for a file of format f, in
// mapping version v, and its digest.
func (m Mapping) canonical(v int, f reader.Format, delimiter byte, quotes bool) (string, string) {
	c := canonicalMapping{
		Version:   v,
		Table:     m.Table,
		Key:       append([]string{}, m.Key...),
		VersionBy: m.Version,
		Columns:   map[string]string{},
		Format:    string(f),
		Quotes:    quotes,
	}
	if c.Key == nil {
		c.Key = []string{}
	}
	if f == reader.CSV || f == reader.TSV {
		c.Delimiter = string(rune(delimiter))
	}
	for name, t := range m.Columns {
		c.Columns[name] = t.StoredName()
	}
	c.Evolve, c.Atomic = m.Evolve, m.Atomic
	c.SkipLines, c.NoHeader, c.Names, c.Select = m.SkipLines, m.NoHeader, m.Names, m.Select
	if len(m.Rename) > 0 {
		c.Rename = m.Rename
	}
	c.Sheet = m.Sheet
	if m.Encoding != "utf-8" {
		c.Encoding = m.Encoding
	}
	if len(m.Null) > 0 { // a set: its order and repeats mean nothing
		c.Null = slices.Compact(slices.Sorted(slices.Values(m.Null)))
	}
	if m.Snapshot != nil {
		c.Snapshot = &canonicalSnapshot{Delete: "hard", Scope: m.Snapshot.ScopeText()}
		if m.Snapshot.Soft {
			c.Snapshot.Delete = "soft"
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // cannot happen: the struct has only marshalable fields
	}
	sum := sha256.Sum256(b)
	return string(b), "sha256:" + hex.EncodeToString(sum[:])
}

// FileKey is the compact key of a file ID that target rows carry: the first
// 8 bytes of a SHA-256 of the ID. It depends on nothing but the file ID, so
// a rerun after the ledger is lost writes the same keys.
func FileKey(fileID string) int64 {
	sum := sha256.Sum256([]byte("idemport/file-key/v1\x00" + fileID))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// FileID expands a --file-id template for the file at path with content
// digest digest: {name} is the file's base name, {stem} that name without
// its format and compression extensions, {path} the path as given (with
// forward slashes), {digest} the content digest. Text outside braces is
// kept; a template without placeholders is the ID itself.
func FileID(template, path, digest string) string {
	return strings.NewReplacer(
		"{name}", filepath.Base(path),
		"{stem}", stem(path),
		"{path}", filepath.ToSlash(path),
		"{digest}", digest,
	).Replace(template)
}

// FileIDVaries reports whether template names each file differently, so it
// may be given with several files.
func FileIDVaries(template string) bool {
	for _, p := range []string{"{name}", "{stem}", "{path}", "{digest}"} {
		if strings.Contains(template, p) {
			return true
		}
	}
	return false
}

// stem is a file's base name without its compression and format extensions.
func stem(path string) string {
	name := filepath.Base(path)
	lower := strings.ToLower(name)
	for _, ext := range []string{".gz", ".zst"} {
		if strings.HasSuffix(lower, ext) {
			name, lower = name[:len(name)-len(ext)], lower[:len(lower)-len(ext)]
		}
	}
	if ext := filepath.Ext(name); ext != "" {
		name = name[:len(name)-len(ext)]
	}
	return name
}

// DefaultTable names the table a file goes to when none is given: the file
// name without its format and compression extensions, with every character
// other than a letter, digit or underscore replaced by an underscore.
func DefaultTable(path string) string {
	name := stem(path)
	var b strings.Builder
	for _, r := range name {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		s = "t_" + s
	}
	return s
}

// ParseScope parses --snapshot-scope COLUMN=VALUE flags.
func ParseScope(specs []string) ([]sink.Term, error) {
	var out []sink.Term
	for _, s := range specs {
		col, val, ok := strings.Cut(s, "=")
		if !ok || col == "" {
			return nil, fmt.Errorf("snapshot scope %q: want COLUMN=VALUE", s)
		}
		out = append(out, sink.Term{Column: col, Value: val})
	}
	return out, nil
}

// ParseRename parses --rename OLD=NEW flags.
func ParseRename(specs []string) (map[string]string, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, s := range specs {
		old, name, ok := strings.Cut(s, "=")
		if !ok || old == "" || name == "" || strings.TrimSpace(name) != name {
			return nil, fmt.Errorf("--rename %q: want OLD=NEW", s)
		}
		if _, dup := out[old]; dup {
			return nil, fmt.Errorf("--rename renames %q twice", old)
		}
		out[old] = name
	}
	return out, nil
}

// ParseColumns parses --column name:type flags.
func ParseColumns(specs []string) (map[string]idemtype.Type, error) {
	out := map[string]idemtype.Type{}
	for _, s := range specs {
		i := strings.LastIndexByte(s, ':')
		if i <= 0 {
			return nil, fmt.Errorf("column %q: want name:type", s)
		}
		t, err := idemtype.ParseType(s[i+1:])
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", s, err)
		}
		out[s[:i]] = t
	}
	return out, nil
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseMapping returns the Mapping whose canonical form is text, as an
// operation recorded it (any mapping version), for a file read as format
// f. Options the canonical form spells whatever was given — the format,
// the delimiter and quotes of CSV and TSV — are left at their defaults
// where the defaults give the same: Format when f is what path's name
// says, Delimiter when it is the format's own, Quotes for CSV.
func parseMapping(text, path string) (Mapping, error) {
	var c canonicalMapping
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		return Mapping{}, fmt.Errorf("read the recorded mapping: %w", err)
	}
	m := Mapping{Table: c.Table, Version: c.VersionBy, Evolve: c.Evolve, Atomic: c.Atomic, SkipLines: c.SkipLines,
		NoHeader: c.NoHeader, Names: c.Names, Select: c.Select, Rename: c.Rename, Null: c.Null, Encoding: c.Encoding, Sheet: c.Sheet}
	if len(c.Key) > 0 {
		m.Key = c.Key
	}
	if len(c.Columns) > 0 {
		m.Columns = map[string]idemtype.Type{}
		for name, stored := range c.Columns {
			var t idemtype.Type
			if err := t.UnmarshalText([]byte(stored)); err != nil {
				return Mapping{}, fmt.Errorf("read the recorded mapping: column %q: %w", name, err)
			}
			m.Columns[name] = t
		}
	}
	f := reader.Format(c.Format)
	if detected, _, err := reader.Detect(formatName(path)); err != nil || detected != f {
		m.Format = f
	}
	if f == reader.CSV || f == reader.TSV {
		def := ","
		if f == reader.TSV {
			def = "\t"
		}
		if c.Delimiter != def && len(c.Delimiter) == 1 {
			m.Delimiter = c.Delimiter[0]
		}
	}
	m.Quotes = c.Quotes && f != reader.CSV
	if c.Snapshot != nil {
		scope, err := store.ParseScope(c.Snapshot.Scope)
		if err != nil {
			return Mapping{}, fmt.Errorf("read the recorded mapping: %w", err)
		}
		m.Snapshot = &Snapshot{Soft: c.Snapshot.Delete == "soft", Scope: scope}
	}
	return m, nil
}
