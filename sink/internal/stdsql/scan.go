package stdsql

import (
	"database/sql"

	"github.com/idemport/idemport/sink"
)

// Strings returns the values of the one text column of rows, in order,
// and closes rows; an error reading a row or ending the rows is returned
// as it is.
func Strings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// TableNames returns the tables of rows, each a schema and a table, named
// as l.SplitTable reads them back (l.JoinTable), and closes rows.
func TableNames(rows *sql.Rows, l sink.Limits) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var schema, table string
		if err := rows.Scan(&schema, &table); err != nil {
			return nil, err
		}
		out = append(out, l.JoinTable(schema, table))
	}
	return out, rows.Err()
}
