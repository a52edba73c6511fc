package input

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader/internal/value"
)

// DefaultMaxRowBytes is the default bound on one row's size in bytes. It is
// what bounds the reader's memory on hostile input.
const DefaultMaxRowBytes = 64 << 20

// Options say how to read a file. The zero value reads by extension with
// default settings.
type Options struct {
	// Format overrides detection by extension.
	Format Format
	// Delimiter separates CSV fields; 0 means ',' for CSV and '\t' for TSV.
	Delimiter byte
	// Quotes turns quote processing on for TSV (always on for CSV).
	Quotes bool
	// Types fixes the type of the named columns instead of inferring it;
	// values that do not parse are bad rows. A Parquet or Arrow column,
	// whose type the file gives, may be fixed to that type, to string (the
	// text of its values) or to json (their JSON); any other type is an
	// error wrapping ErrType.
	Types map[string]value.Type
	// NotNull names columns that must have a value in every row (natural
	// key columns); a row with a null there is bad.
	NotNull []string
	// Limits are what the target's columns hold, by column name: a value
	// outside its column's Limit is a bad row.
	Limits map[string]value.Limit
	// Rules are what the target database's decimal and JSON types hold,
	// as its driver says: a value of a Limit.Decimal or Limit.JSON column
	// that they refuse is a bad row. The zero Rules check nothing.
	Rules idemtype.ValueRules
	// AllJSON says every JSON value goes to the database's JSON type (the
	// json columns of a table the import creates): a nested JSON value,
	// or a json column's value, that Rules.JSON refuses is a bad row.
	AllJSON bool
	// Exact names columns whose inferred type must hold every value
	// exactly in a comparison too: never float64 (a natural key column of
	// 9007199254740992 and 9007199254740993 is decimal, not two equal
	// floats).
	Exact []string
	// Key names the natural key columns, in order. With a key the plan pass
	// finds, for each key that occurs more than once, the rows that lose to
	// another row of the file with that key (Plan.Superseded), and
	// partition readers skip them: the last occurrence wins, or with
	// Version, the occurrence with the newest version (NULL is older than
	// any), the last among equals.
	Key []string
	// Version names the version column, or is empty.
	Version string
	// MaxRowBytes bounds a row's size in text formats; 0 means
	// DefaultMaxRowBytes.
	MaxRowBytes int
	// SkipLines is how many lines before the header (or, with NoHeader,
	// before the first data row) are not part of the table, such as a
	// report's title: physical lines of a text file, rows of a sheet, the
	// first rows of a Parquet or Arrow file.
	SkipLines int
	// NoHeader says a CSV or TSV file has no header: its first line (after
	// SkipLines) is data. Its columns are named by Names, or column1 …
	// columnN after the fields of the first row.
	NoHeader bool
	// Names, when set, names a CSV or TSV file's columns by position,
	// replacing its header's names (or naming those of a file without
	// one): one name per column of the file.
	Names []string
	// Select, when set, lists the only columns of the file that are read,
	// by their names in the file (after Names), in the order the columns
	// are to have; the others are neither checked nor stored.
	Select []string
	// Rename gives columns of the file (by their names in the file, after
	// Names) another name. Types, NotNull, Limits, Exact, Key and Version
	// name columns as renamed.
	Rename map[string]string
	// Null lists the markers that stand for NULL in a CSV or TSV file (or
	// a sheet): an unquoted field equal to one is null, as an unquoted
	// empty field always is. A quoted field is never null.
	Null []string
	// InferDates types, where the type is inferred, a column of ISO dates
	// (YYYY-MM-DD) as date and one of timestamps without a zone as
	// timestamp (without time zone); without it they are text and points
	// in time taken as UTC, as mapping version 1 read them.
	InferDates bool
	// Encoding is the canonical name (EncodingName) of the encoding a
	// text file is written in; "" means UTF-8. A UTF-16 or UTF-8 byte
	// order mark at the start of the file decides instead. A file in
	// another encoding than UTF-8 is decoded as it is read: byte offsets
	// (partitions, messages) are those of its UTF-8 text, and a partition
	// is read by decoding the file from its start, as a compressed one
	// is decompressed from its start.
	Encoding string
	// Sheet names the sheet of an Excel workbook to read; "" means its
	// first.
	Sheet string
	// Allocator allocates the Arrow memory of the batches the reader
	// returns and of the Arrow decoders; nil means memory.DefaultAllocator.
	// (Parquet's page buffers come from memory.DefaultAllocator.)
	Allocator memory.Allocator
}

// ErrOption means a reading option does not fit the file: --select or
// --rename names a column it does not have, --columns gives another number
// of names than it has columns, or the names they make collide. The
// command, not the file, is wrong.
var ErrOption = errors.New("option does not fit the file")

// DefaultNames returns column1 … columnN, the names of the columns of a
// file without a header when Options.Names does not give them.
func DefaultNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "column" + strconv.Itoa(i+1)
	}
	return out
}

// Project decides, from the names of a file's columns (after
// Options.Names), which of them are read and what they are called: the
// position in file of each column read, in order, and its name after
// Options.Rename. proj is nil when every column is read in file order.
func (o *Options) Project(file []string) (proj []int, names []string, err error) {
	pos := make(map[string]int, len(file))
	for i, n := range file {
		if _, dup := pos[n]; !dup {
			pos[n] = i
		}
	}
	for old := range o.Rename {
		if _, ok := pos[old]; !ok {
			return nil, nil, fmt.Errorf("%w: --rename %s: the file has no column %q (it has %s)", ErrOption, old, old, strings.Join(file, ", "))
		}
	}
	if len(o.Select) > 0 {
		seen := map[string]bool{}
		for _, n := range o.Select {
			i, ok := pos[n]
			if !ok {
				return nil, nil, fmt.Errorf("%w: --select: the file has no column %q (it has %s)", ErrOption, n, strings.Join(file, ", "))
			}
			if seen[n] {
				return nil, nil, fmt.Errorf("%w: --select names %q twice", ErrOption, n)
			}
			seen[n] = true
			proj = append(proj, i)
		}
	} else {
		proj = make([]int, len(file))
		for i := range proj {
			proj[i] = i
		}
	}
	out := map[string]string{}
	for _, i := range proj {
		name := file[i]
		if n, ok := o.Rename[name]; ok {
			name = n
		}
		if prev, dup := out[name]; dup && prev != file[i] { // the same name twice in the file is the header's defect

			return nil, nil, fmt.Errorf("%w: columns %q and %q would both be named %q", ErrOption, prev, file[i], name)
		}
		out[name] = file[i]
		names = append(names, name)
	}
	if len(o.Select) == 0 {
		proj = nil
	}
	return proj, names, nil
}

// SourceName returns the name in the file of the column named name after
// Options.Rename.
func (o *Options) SourceName(name string) string {
	for old, n := range o.Rename {
		if n == name {
			return old
		}
	}
	return name
}
