package sink

import "database/sql"

// Comparison is what Driver.Compare compares: rows of a file with the
// rows of Target's table that hold their keys.
type Comparison struct {
	// Target names the table and its key columns.
	Target Target
	// Table is Target's table as Describe found it: the types its values
	// are bound and compared as.
	Table *Table
	// FileKey is the lineage (FileColumn) of the stored rows whose values
	// are compared.
	FileKey int64
	// Columns are the file's columns whose values are compared (Rewritten):
	// none compares keys only.
	Columns []string
	// Rows holds the file's rows, each the values of Target.Key and then
	// of Columns as a file holds them: int64, float64, bool, string, the
	// text of decimals and timestamps (FormatTimestamp, FormatDate,
	// FormatLocalTimestamp), nil for null.
	Rows [][]any
}

// Differing is a stored row whose values are not the file's, as
// Driver.Compare reports it. Key holds the row's key columns as text;
// Differs, Stored and File hold, for each of Comparison.Columns, whether
// its value differs, the stored value and the file's, as text (NULL not
// Valid).
type Differing struct {
	Key     []sql.NullString
	Differs []bool
	Stored  []sql.NullString
	File    []sql.NullString
}
