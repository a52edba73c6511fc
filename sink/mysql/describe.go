package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// kindOf maps a column's type, as information_schema.columns gives its
// data_type and column_type, to a kind. A JSON column is a LONGTEXT that a
// CHECK (json_valid(…)) constraint keeps to JSON on MariaDB, and the type
// json on MySQL: json says which (Describe). TINYINT(1) is BOOLEAN's
// spelling. DATETIME holds what the session's time zone, UTC, made of a
// point in time, as TIMESTAMP does.
func kindOf(dataType, columnType string, json bool) idemtype.Type {
	switch dataType {
	case "tinyint":
		if strings.HasPrefix(columnType, "tinyint(1)") {
			return idemtype.Bool
		}
		return idemtype.Int64
	case "smallint", "mediumint", "int", "bigint":
		if strings.Contains(columnType, "unsigned") && dataType == "bigint" {
			return idemtype.Unknown // beyond int64
		}
		return idemtype.Int64
	case "float", "double":
		return idemtype.Float64
	case "decimal":
		return idemtype.Decimal
	case "datetime", "timestamp":
		return idemtype.Timestamp
	case "date":
		return idemtype.Date
	case "json":
		return idemtype.JSON
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if json {
			return idemtype.JSON
		}
		return idemtype.String
	}
	return idemtype.Unknown
}

// limits sets what column c holds beyond its kind: the width of a narrower
// integer (an unsigned one's range is not a signed width: none is set, as
// for MEDIUMINT's 24 bits, and the database refuses what does not fit), a
// VARCHAR's or CHAR's characters, and a DECIMAL's precision and scale.
func limits(c *sink.Column, dataType, columnType string, chars, precision, scale sql.NullInt64) {
	unsigned := strings.Contains(columnType, "unsigned")
	switch {
	case dataType == "smallint" && !unsigned:
		c.IntBits = 16
	case dataType == "int" && !unsigned:
		c.IntBits = 32
	case (dataType == "varchar" || dataType == "char") && chars.Valid:
		c.MaxChars = int(chars.Int64)
	case dataType == "decimal":
		c.Numeric = true
		c.Precision, c.Scale = int(precision.Int64), int(scale.Int64)
	}
}

// marked sets the kind of a column Ensure made whose SQL type does not say
// it (see markDecimal): a text column marked a decimal holds decimals, a
// DATETIME marked local holds local timestamps.
func marked(c *sink.Column, comment string) {
	switch {
	case comment == markDecimal && c.Kind == idemtype.String:
		c.Kind = idemtype.Decimal
	case comment == markLocal && c.Kind == idemtype.Timestamp && strings.HasPrefix(c.SQLType, "datetime"):
		c.Kind = idemtype.LocalTimestamp
	}
}

// Describe implements sink.Driver: an unqualified name is in the
// connection's database. The number columns that key a decimal column
// (markKey) are not listed: a key on one is listed as on its decimal
// column. A name qualified by a database that does not
// exist is ErrNoSchema.
func (d Driver) Describe(ctx context.Context, qr sink.Querier, name string) (*sink.Table, error) {
	db, table := splitName(name)
	rows, err := qr.QueryContext(ctx, `SELECT c.column_name, c.column_type, c.data_type, c.is_nullable = 'NO',
		c.column_default IS NOT NULL OR c.extra LIKE '%auto_increment%' OR c.extra LIKE '%GENERATED%',
		c.character_maximum_length, c.numeric_precision, c.numeric_scale,
		EXISTS (SELECT 1 FROM information_schema.check_constraints k
			WHERE k.constraint_schema = c.table_schema AND k.table_name = c.table_name
			AND k.check_clause = 'json_valid(' || '"' || c.column_name || '"' || ')'),
		c.column_comment
		FROM information_schema.columns c
		WHERE c.table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(c.table_name AS BINARY) = CAST(? AS BINARY)
		ORDER BY c.ordinal_position`, db, table)
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	t := &sink.Table{Name: name}
	keyOf := map[string]string{} // a number key column (markKey): the column it keys
	for rows.Next() {
		var c sink.Column
		var dataType, comment string
		var json bool
		var chars, precision, scale sql.NullInt64
		if err := rows.Scan(&c.Name, &c.SQLType, &dataType, &c.NotNull, &c.Default, &chars, &precision, &scale, &json, &comment); err != nil {
			rows.Close()
			return nil, fmt.Errorf("describe table %s: %w", name, err)
		}
		if of, ok := strings.CutPrefix(comment, markKey); ok && c.Default {
			keyOf[c.Name] = of
			continue
		}
		c.Kind = kindOf(dataType, c.SQLType, json)
		limits(&c, dataType, c.SQLType, chars, precision, scale)
		marked(&c, comment)
		t.Columns = append(t.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, err)
	}
	if len(t.Columns) == 0 {
		return nil, d.noDatabase(ctx, qr, name, db)
	}
	// Keys are the primary key and the unique indexes on whole columns:
	// a prefix index (sub_part) does not make its columns unique.
	idx, err := qr.QueryContext(ctx, `SELECT s.index_name, s.column_name, s.sub_part IS NOT NULL FROM information_schema.statistics s
		WHERE s.table_schema = coalesce(nullif(?, ''), DATABASE()) AND CAST(s.table_name AS BINARY) = CAST(? AS BINARY)
		AND s.non_unique = 0
		ORDER BY s.index_name <> 'PRIMARY', s.index_name, s.seq_in_index`, db, table)
	if err != nil {
		return nil, fmt.Errorf("describe keys of %s: %w", name, err)
	}
	defer idx.Close()
	var last string
	var prefix []bool
	for idx.Next() {
		var index, col string
		var part bool
		if err := idx.Scan(&index, &col, &part); err != nil {
			return nil, fmt.Errorf("describe keys of %s: %w", name, err)
		}
		if index != last || len(t.Keys) == 0 {
			t.Keys = append(t.Keys, nil)
			prefix = append(prefix, false)
			last = index
		}
		if of, ok := keyOf[col]; ok {
			col = of
		}
		t.Keys[len(t.Keys)-1] = append(t.Keys[len(t.Keys)-1], col)
		prefix[len(prefix)-1] = prefix[len(prefix)-1] || part
	}
	if err := idx.Err(); err != nil {
		return nil, fmt.Errorf("describe keys of %s: %w", name, err)
	}
	keys := t.Keys[:0]
	for i, k := range t.Keys {
		if !prefix[i] {
			keys = append(keys, k)
		}
	}
	t.Keys = keys
	return t, nil
}

// noDatabase returns, for a table name found to have no columns, an
// error wrapping ErrNoSchema when it is qualified by a database that does
// not exist, and nil otherwise.
func (Driver) noDatabase(ctx context.Context, qr sink.Querier, name, db string) error {
	if db == "" {
		return nil
	}
	var n int
	if err := qr.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.schemata
		WHERE CAST(schema_name AS BINARY) = CAST(? AS BINARY)`, db).Scan(&n); err != nil {
		return fmt.Errorf("look up database %s: %w", db, err)
	}
	if n == 0 {
		return fmt.Errorf("--table %s: %w %q on this server; create it first (CREATE DATABASE %s), or name another", name, sink.ErrNoSchema, db, q(db))
	}
	return nil
}

// HoldColumns implements sink.Driver: a statement that reads table takes
// its shared metadata lock, which lasts until tx ends, and ALTER TABLE
// needs the exclusive one, so it waits for tx (and tx's read waits for an
// ALTER TABLE under way).
func (Driver) HoldColumns(ctx context.Context, tx *sql.Tx, table string) error {
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM `+Driver{}.QuoteTable(table)+` WHERE 1 = 0`); err != nil {
		return fmt.Errorf("lock the columns of %s: %w", table, err)
	}
	return nil
}

// DeleteFile implements sink.Driver.
func (d Driver) DeleteFile(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error) {
	t, err := d.Describe(ctx, tx, table)
	if err != nil || t == nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM `+d.QuoteTable(table)+` WHERE `+q(sink.FileColumn)+` = ?`, fileKey)
	if err != nil {
		return 0, fmt.Errorf("delete rows of file %d from %s: %w", fileKey, table, err)
	}
	return res.RowsAffected()
}
