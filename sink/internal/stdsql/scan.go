package stdsql

import "database/sql"

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
