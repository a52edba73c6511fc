package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// ConstrainStage implements sink.StageConstrainer. SQLite cannot add a
// constraint to a table, so it makes the staging table again (empty, as
// Ensure made it, with its indexes) with, as table constraints, each
// CHECK of target's CREATE statement that names only columns the stage
// has with the same type affinity (tried on a scratch table of those
// columns, which refuses a CHECK naming another), and a CHECK (… IS NOT
// NULL) for each column NOT NULL in target and nullable in the stage.
func (Driver) ConstrainStage(ctx context.Context, tx *sql.Tx, target, stage string) error {
	var def string
	switch err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, target).Scan(&def); {
	case err == sql.ErrNoRows:
		return nil
	case err != nil:
		return fmt.Errorf("read the constraints of %s: %w", target, err)
	}
	tcols, err := tableInfo(ctx, tx, target)
	if err != nil {
		return err
	}
	scols, err := tableInfo(ctx, tx, stage)
	if err != nil {
		return err
	}
	var same []string
	var checks []string
	for _, s := range scols {
		for _, t := range tcols {
			if s.name != t.name {
				continue
			}
			if affinity(s.typ) == affinity(t.typ) {
				same = append(same, q(s.name)+" "+s.typ)
			}
			if t.notNull && !s.notNull {
				checks = append(checks, q(s.name)+" IS NOT NULL")
			}
		}
	}
	const probe = "_idemport_probe_check"
	for _, c := range tableChecks(def) {
		if len(same) == 0 {
			break
		}
		_, err := tx.ExecContext(ctx, "CREATE TEMP TABLE "+q(probe)+" ("+strings.Join(same, ", ")+", CHECK ("+c+"))")
		if err != nil {
			continue // names a column the stage lacks or holds in another type
		}
		if _, err := tx.ExecContext(ctx, "DROP TABLE temp."+q(probe)); err != nil {
			return fmt.Errorf("drop scratch table %s: %w", probe, err)
		}
		checks = append(checks, c)
	}
	if len(checks) == 0 {
		return nil
	}
	var create string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, stage).Scan(&create); err != nil {
		return fmt.Errorf("read staging table %s: %w", stage, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`, stage)
	if err != nil {
		return fmt.Errorf("read the indexes of staging table %s: %w", stage, err)
	}
	var indexes []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return fmt.Errorf("read the indexes of staging table %s: %w", stage, err)
		}
		indexes = append(indexes, s)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the indexes of staging table %s: %w", stage, err)
	}
	end := strings.LastIndexByte(create, ')')
	if end < 0 {
		return fmt.Errorf("staging table %s: no column list in %q", stage, create)
	}
	var b strings.Builder
	b.WriteString(create[:end])
	for _, c := range checks {
		b.WriteString(",\n  CHECK (" + c + ")")
	}
	b.WriteString(create[end:])
	stmts := append([]string{"DROP TABLE " + q(stage), b.String()}, indexes...)
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("give staging table %s the constraints of %s: %w", stage, target, err)
		}
	}
	return nil
}

// affinity is the type affinity of a column declared of type typ (the
// rules of SQLite's "Datatypes In SQLite", 3.1).
func affinity(typ string) string {
	t := strings.ToUpper(typ)
	switch {
	case strings.Contains(t, "INT"):
		return "INTEGER"
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"):
		return "TEXT"
	case t == "", strings.Contains(t, "BLOB"):
		return "BLOB"
	case strings.Contains(t, "REAL"), strings.Contains(t, "FLOA"), strings.Contains(t, "DOUB"):
		return "REAL"
	}
	return "NUMERIC"
}

// columnInfo is a column as PRAGMA table_info gives it.
type columnInfo struct {
	name, typ string
	notNull   bool
}

// tableInfo returns the columns of table.
func tableInfo(ctx context.Context, tx *sql.Tx, table string) ([]columnInfo, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, type, "notnull" FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	var cols []columnInfo
	for rows.Next() {
		var c columnInfo
		if err := rows.Scan(&c.name, &c.typ, &c.notNull); err != nil {
			return nil, fmt.Errorf("read the columns of %s: %w", table, err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	return cols, nil
}

// tableChecks returns the expression of each CHECK constraint (of a
// column or of the table) in def, a CREATE TABLE statement: the text
// inside the parentheses after each CHECK keyword, the keyword being
// found outside string literals, quoted names and comments.
func tableChecks(def string) []string {
	var checks []string
	i := 0
	// skip returns the index past the token, literal or comment at j
	// that is not a word or a parenthesis, or j when there is none.
	skip := func(j int) int {
		switch c := def[j]; {
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			for k := j + 1; k < len(def); k++ {
				if def[k] == closer {
					if closer != ']' && k+1 < len(def) && def[k+1] == closer {
						k++
						continue
					}
					return k + 1
				}
			}
			return len(def)
		case strings.HasPrefix(def[j:], "--"):
			if k := strings.IndexByte(def[j:], '\n'); k >= 0 {
				return j + k + 1
			}
			return len(def)
		case strings.HasPrefix(def[j:], "/*"):
			if k := strings.Index(def[j+2:], "*/"); k >= 0 {
				return j + 2 + k + 2
			}
			return len(def)
		}
		return j
	}
	word := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	for i < len(def) {
		if k := skip(i); k != i {
			i = k
			continue
		}
		if !word(def[i]) {
			i++
			continue
		}
		k := i
		for k < len(def) && word(def[k]) {
			k++
		}
		isCheck := strings.EqualFold(def[i:k], "CHECK")
		i = k
		if !isCheck {
			continue
		}
		for i < len(def) {
			if n := skip(i); n != i {
				i = n
			} else if def[i] == ' ' || def[i] == '\t' || def[i] == '\n' || def[i] == '\r' {
				i++
			} else {
				break
			}
		}
		if i >= len(def) || def[i] != '(' {
			continue
		}
		depth, start := 0, i+1
		for i < len(def) {
			if n := skip(i); n != i {
				i = n
				continue
			}
			switch def[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			i++
			if depth == 0 {
				checks = append(checks, def[start:i-1])
				break
			}
		}
	}
	return checks
}

// RewritesRows implements sink.RowRewriter: whether table has a trigger,
// which may skip the rows the move gives it (RAISE(IGNORE)) or change
// them.
func (Driver) RewritesRows(ctx context.Context, tx *sql.Tx, table string) (bool, error) {
	var yes bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE)`,
		table).Scan(&yes); err != nil {
		return false, fmt.Errorf("read the triggers of %s: %w", table, err)
	}
	return yes, nil
}
