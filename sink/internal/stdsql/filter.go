package stdsql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/idemport/idemport/ledger"
)

// where renders f as a WHERE clause on table (empty when f selects
// everything) and its arguments.
func where(f ledger.Filter, prefix, table string) (string, []any) {
	var where []string
	var args []any
	add := func(col, v string) {
		if v != "" {
			where = append(where, table+"."+col+" = ?")
			args = append(args, v)
		}
	}
	add("table_name", f.Table)
	add("file_id", f.FileID)
	add("state", string(f.State))
	add("content_digest", f.Digest)
	if f.Path != "" {
		where = append(where, `(`+table+`.file_path = ? OR EXISTS (SELECT 1 FROM `+prefix+`attempts a
			WHERE a.table_name = `+table+`.table_name AND a.file_id = `+table+`.file_id AND a.file_path = ?))`)
		args = append(args, f.Path, f.Path)
	}
	if f.FileIDPrefix != "" {
		// substr counts characters in SQLite and PostgreSQL alike.
		where = append(where, fmt.Sprintf("substr(%s.file_id, 1, %d) = ?", table, utf8.RuneCountInString(f.FileIDPrefix)))
		args = append(args, f.FileIDPrefix)
	}
	if len(where) == 0 {
		return "", nil
	}
	return ` WHERE ` + strings.Join(where, " AND "), args
}
