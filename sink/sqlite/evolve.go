//go:build cgo

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// AddColumn implements sink.Driver.
func (Driver) AddColumn(ctx context.Context, tx *sql.Tx, table string, f arrow.Field) error {
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+q(table)+` ADD COLUMN `+q(f.Name)+` `+sqlType(idemtype.TypeOf(f))); err != nil {
		return fmt.Errorf("add column %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// Widen implements sink.Driver. SQLite cannot change a column's declared
// type, and a value stored into an INTEGER column is converted by its
// affinity ('02134' becomes 2134), so the table is rebuilt with the column
// declared anew (DECIMAL TEXT or TEXT, both TEXT affinity): its CREATE
// statement with that one declaration changed, the rows copied (integers
// become their exact text), the indexes created again. A table whose
// declaration of the column is not one idemport writes ("name" INTEGER,
// REAL or DECIMAL TEXT) is not rebuilt. An index that compares the column
// by number (a decimal key's, keyIndexSQL) compares it as text once it is
// text; an int64 key column widened to decimal gets its index by number
// from Ensure, which follows every change.
func (Driver) Widen(ctx context.Context, tx *sql.Tx, table, column string, kind idemtype.Type) error {
	var create string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&create); err != nil {
		return fmt.Errorf("widen column %s of %s: read its definition: %w", column, table, err)
	}
	var decl string
	for _, typ := range []string{"INTEGER", "REAL", "DECIMAL TEXT"} {
		if n := strings.Count(create, q(column)+" "+typ); n == 1 {
			decl = q(column) + " " + typ
		}
	}
	if decl == "" {
		return fmt.Errorf("widen column %s of %s: its declaration is not one idemport can rewrite; change it to %s by hand", column, table, sqlType(kind))
	}
	rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`, table)
	if err != nil {
		return fmt.Errorf("widen column %s of %s: read its indexes: %w", column, table, err)
	}
	indexes, err := stdsql.Strings(rows)
	if err != nil {
		return fmt.Errorf("widen column %s of %s: read its indexes: %w", column, table, err)
	}
	if kind != idemtype.Decimal {
		for i, s := range indexes {
			indexes[i] = strings.ReplaceAll(s, numberExpr(q(column)), q(column))
		}
	}
	tmp := table + "_idemport_widen"
	head := "CREATE TABLE " + q(table)
	if !strings.HasPrefix(create, head) {
		return fmt.Errorf("widen column %s of %s: its definition does not start with %s; change it to %s by hand", column, table, head, sqlType(kind))
	}
	stmts := []string{
		"CREATE TABLE " + q(tmp) + strings.Replace(create[len(head):], decl, q(column)+" "+sqlType(kind), 1),
		"INSERT INTO " + q(tmp) + " SELECT * FROM " + q(table),
		"DROP TABLE " + q(table),
		"ALTER TABLE " + q(tmp) + " RENAME TO " + q(table),
	}
	stmts = append(stmts, indexes...)
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("widen column %s of %s: %w", column, table, err)
		}
	}
	return nil
}
