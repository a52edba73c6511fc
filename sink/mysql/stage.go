package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemport/idemport/sink"
)

var _ sink.StageConstrainer = Driver{}

// stageColumnsQuery lists a table's columns (of the database, or "": the
// connection's, and the table) with what makes a CHECK over them judge
// the same: the type and the collation; and whether each is NOT NULL.
const stageColumnsQuery = `SELECT c.column_name, c.column_type, coalesce(c.collation_name, ''), c.is_nullable = 'NO'
	FROM information_schema.columns c
	WHERE c.table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(c.table_name AS BINARY) = CAST(? AS BINARY)`

// stageChecksQuery lists a table's CHECK constraints, by name, with their
// clauses. A constraint's name is its table's alone (the table's name
// selects them): two tables of a database may each have one of a name.
const stageChecksQuery = `SELECT k.constraint_name, k.check_clause FROM information_schema.check_constraints k
	WHERE k.constraint_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(k.table_name AS BINARY) = CAST(? AS BINARY)`

// stageColumn is a column as stageColumnsQuery reads it.
type stageColumn struct {
	typ, collation string
	notNull        bool
}

// ConstrainStage implements sink.StageConstrainer: it adds to stage,
// under their names, the CHECK constraints of target (table or column
// ones) whose every column (checkColumns) stage holds with the same type
// and collation, but those it has by that name already (its JSON
// columns' json_valid, a step run again after a kill); and NOT NULL to
// the columns NOT NULL in target that stage holds nullable, of any type,
// but its key and lineage columns (a NULL key is a bad row of the plan),
// restated as Ensure made them (columnDef of the kind Describe reads). One
// ALTER TABLE, which commits, as the DDL step that made the stage does.
func (d Driver) ConstrainStage(ctx context.Context, tx *sql.Tx, target, stage string) error {
	tdb, tname := splitName(target)
	sdb, sname := splitName(stage)
	tcols, err := stageColumns(ctx, tx, tdb, tname)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", target, err)
	}
	if len(tcols) == 0 {
		return nil // no such table: Ensure makes it, with no constraint
	}
	scols, err := stageColumns(ctx, tx, sdb, sname)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", stage, err)
	}
	tchecks, err := checkClauses(ctx, tx, tdb, tname)
	if err != nil {
		return fmt.Errorf("read the constraints of %s: %w", target, err)
	}
	schecks, err := checkClauses(ctx, tx, sdb, sname)
	if err != nil {
		return fmt.Errorf("read the constraints of %s: %w", stage, err)
	}
	var alters []string
	names := make([]string, 0, len(tchecks))
	for name := range tchecks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, ok := schecks[name]; ok {
			continue
		}
		clause := tchecks[name]
		cols, ok := checkColumns(clause)
		same := ok && len(cols) > 0
		for _, c := range cols {
			s, ok := scols[c]
			same = same && ok && s.typ == tcols[c].typ && s.collation == tcols[c].collation
		}
		if same {
			alters = append(alters, "ADD CONSTRAINT "+q(name)+" CHECK ("+clause+")")
		}
	}
	var nullable []string
	for name, t := range tcols {
		if s, ok := scols[name]; ok && t.notNull && !s.notNull && name != sink.FileColumn && name != sink.RowColumn {
			nullable = append(nullable, name)
		}
	}
	if len(nullable) > 0 {
		st, err := d.Describe(ctx, tx, stage)
		if err != nil {
			return err
		}
		if st == nil {
			return fmt.Errorf("give staging table %s the constraints of %s: it does not exist", stage, target)
		}
		slices.Sort(nullable)
		for _, name := range nullable {
			c := st.Column(name)
			if c == nil || slices.ContainsFunc(st.Keys, func(k []string) bool { return slices.Contains(k, name) }) {
				continue
			}
			alters = append(alters, "MODIFY COLUMN "+columnDef(name, c.Kind, 0, true))
		}
	}
	if len(alters) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+tableRef(sdb, sname)+` `+strings.Join(alters, ", ")); err != nil {
		return fmt.Errorf("give staging table %s the constraints of %s: %w", stage, target, err)
	}
	return nil
}

// stageColumns reads the columns of table in db (stageColumnsQuery).
func stageColumns(ctx context.Context, tx *sql.Tx, db, table string) (map[string]stageColumn, error) {
	rows, err := tx.QueryContext(ctx, stageColumnsQuery, db, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]stageColumn{}
	for rows.Next() {
		var name string
		var c stageColumn
		if err := rows.Scan(&name, &c.typ, &c.collation, &c.notNull); err != nil {
			return nil, err
		}
		out[name] = c
	}
	return out, rows.Err()
}

// checkClauses reads the CHECK constraints of table in db, by name
// (stageChecksQuery).
func checkClauses(ctx context.Context, tx *sql.Tx, db, table string) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, stageChecksQuery, db, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, clause string
		if err := rows.Scan(&name, &clause); err != nil {
			return nil, err
		}
		out[name] = clause
	}
	return out, rows.Err()
}

// checkColumns returns the columns a CHECK clause names, as the server
// writes it in information_schema for the session (ANSI_QUOTES): each
// quoted with double quotes or backquotes, outside the string literals
// (in single quotes), a quote doubled in each standing for one. ok is
// false when the clause ends inside a quote, or holds a backslash: the
// server writes a string's backslash and quote with backslash escapes,
// which this session (NO_BACKSLASH_ESCAPES) would read back otherwise, so
// such a CHECK is left to the move.
func checkColumns(clause string) (cols []string, ok bool) {
	if strings.Contains(clause, `\`) {
		return nil, false
	}
	for i := 0; i < len(clause); i++ {
		quote := clause[i]
		if quote != '`' && quote != '\'' && quote != '"' {
			continue
		}
		var b strings.Builder
		closed := false
		for i++; i < len(clause); i++ {
			if c := clause[i]; c != quote {
				b.WriteByte(c)
				continue
			}
			if i+1 < len(clause) && clause[i+1] == quote {
				b.WriteByte(quote)
				i++
				continue
			}
			closed = true
			break
		}
		if !closed {
			return nil, false
		}
		if quote != '\'' && !slices.Contains(cols, b.String()) {
			cols = append(cols, b.String())
		}
	}
	return cols, true
}
