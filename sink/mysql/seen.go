package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
)

// EnsureSeen implements sink.Driver: the table of a snapshot's keys is an
// ordinal target table (Ensure) with an index on the key for the sweep's
// anti-join. MariaDB indexes no expression, so a decimal key column is
// indexed through a stored generated column of its number (keyExpr,
// commented markKey, which Describe hides), as the tables Ensure keys by
// a decimal are; text is indexed by a prefix of its characters, as InnoDB
// indexes no whole TEXT. The sweep compares a decimal key by keyExpr of
// the column, which MariaDB before 11.8 does not match to the generated
// column's index, so its anti-join scans for such a key. Each statement is
// DDL and commits tx (see the package documentation), and each is
// idempotent (IF NOT EXISTS).
//
// A text key column is of the character set and collation of target's
// key column (collated), not of the binary one of the tables Ensure
// makes: in a comparison of two columns a binary collation wins, and the
// sweep would find no stored 'A' among the file's keys where target's
// utf8mb4_general_ci key holds the file's 'a' as that row, and delete it.
// Of one collation, the comparison uses the index of the seen keys.
func (d Driver) EnsureSeen(ctx context.Context, tx *sql.Tx, table, target string, key []string, schema *arrow.Schema) error {
	if err := d.Ensure(ctx, tx, sink.Target{Table: table}, schema); err != nil {
		return err
	}
	kind := func(name string) idemtype.Type {
		return idemtype.TypeOf(schema.Field(schema.FieldIndices(name)[0]))
	}
	if err := d.collated(ctx, tx, table, target, key, kind); err != nil {
		return err
	}
	chars := keyChars(key, kind)
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = q(k)
		switch kind(k) {
		case idemtype.Decimal:
			cols[i] = q(keyColumn(i))
			add := `ALTER TABLE ` + d.QuoteTable(table) + ` ADD COLUMN IF NOT EXISTS ` + cols[i] + ` MEDIUMTEXT AS (` + keyExpr(q(k)) +
				`) STORED COMMENT '` + markKey + strings.ReplaceAll(k, "'", "''") + `'`
			if _, err := tx.ExecContext(ctx, add); err != nil {
				return fmt.Errorf("add the number of key column %s to %s: %w", k, table, err)
			}
			cols[i] += fmt.Sprintf("(%d)", chars)
		case idemtype.String, idemtype.JSON:
			cols[i] += fmt.Sprintf("(%d)", chars)
		}
	}
	_, name := splitName(table)
	if _, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS `+q(name+"_key")+` ON `+d.QuoteTable(table)+` (`+strings.Join(cols, ", ")+`)`); err != nil {
		return fmt.Errorf("index the snapshot's keys in %s: %w", table, err)
	}
	return nil
}

// collated changes each text key column of table (the seen keys) whose
// collation is not that of the column of target (when it exists) to
// target's character set and collation, keeping its type and NOT NULL.
// A column already so is left alone: run again, it changes nothing.
func (d Driver) collated(ctx context.Context, tx *sql.Tx, table, target string, key []string, kind func(string) idemtype.Type) error {
	tt, err := d.Describe(ctx, tx, target)
	if err != nil || tt == nil {
		return err
	}
	st, err := d.Describe(ctx, tx, table)
	if err != nil || st == nil {
		return err
	}
	for _, k := range key {
		c, s := tt.Column(k), st.Column(k)
		if kind(k) != idemtype.String || c == nil || s == nil || c.Kind != idemtype.String || c.Collation == "" || c.Collation == s.Collation {
			continue
		}
		var charset string
		if err := tx.QueryRowContext(ctx, `SELECT character_set_name FROM information_schema.collations WHERE collation_name = ?`, c.Collation).Scan(&charset); err != nil {
			return fmt.Errorf("read the character set of collation %s: %w", c.Collation, err)
		}
		null := " NULL"
		if s.NotNull {
			null = " NOT NULL"
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE `+d.QuoteTable(table)+` MODIFY COLUMN `+q(k)+` `+s.SQLType+
			` CHARACTER SET `+charset+` COLLATE `+c.Collation+null); err != nil {
			return fmt.Errorf("collate key column %s of %s as %s's: %w", k, table, target, err)
		}
	}
	return nil
}
