package mysql

import (
	"context"
	"database/sql"
	"strings"
)

// maxPlaceholders is the most placeholders one prepared statement may have
// (the protocol counts them in 16 bits).
const maxPlaceholders = 65535

// inserter writes rows into one table with multi-row INSERT statements,
// each within the server's limits: at most maxPlaceholders values and
// about budget bytes of them (a row larger than that goes alone; the
// driver sends a long value in pieces of its own). It is not safe for
// concurrent use.
type inserter struct {
	head    string // INSERT INTO table (columns) VALUES
	width   int    // values per row
	maxRows int
	budget  int
	tuple   string // (?, ?, …)
	// full is the statement of maxRows rows, built once.
	full string
	args []any
}

// newInserter returns an inserter of rows of width values into the
// columns (already quoted) of table (already quoted), within budget bytes
// a statement.
func newInserter(table string, columns []string, budget int) *inserter {
	width := len(columns)
	return &inserter{
		head:    "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES ",
		width:   width,
		maxRows: maxPlaceholders / width,
		budget:  budget,
		tuple:   "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")",
	}
}

// statement returns the INSERT of rows rows.
func (in *inserter) statement(rows int) string {
	if rows == in.maxRows && in.full != "" {
		return in.full
	}
	var b strings.Builder
	b.Grow(len(in.head) + rows*(len(in.tuple)+2))
	b.WriteString(in.head)
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(in.tuple)
	}
	if rows == in.maxRows {
		in.full = b.String()
	}
	return b.String()
}

// insert inserts n rows inside tx, row r's values appended by row(r, args),
// in order, as few statements as the limits allow. It returns the rows the
// statements inserted.
func (in *inserter) insert(ctx context.Context, tx *sql.Tx, n int, row func(r int, args []any) []any) (int64, error) {
	var total int64
	for start := 0; start < n; {
		args, bytes, end := in.args[:0], 0, start
		for end < n && end-start < in.maxRows {
			before, more := len(args), 0
			args = row(end, args)
			for _, v := range args[before:] {
				more += size(v)
			}
			if end > start && bytes+more > in.budget {
				args = args[:before]
				break
			}
			bytes += more
			end++
		}
		in.args = args
		res, err := tx.ExecContext(ctx, in.statement(end-start), args...)
		clear(in.args) // let the batch's strings go
		if err != nil {
			return total, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += k
		start = end
	}
	return total, nil
}
