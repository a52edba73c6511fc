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
func (d Driver) EnsureSeen(ctx context.Context, tx *sql.Tx, table string, key []string, schema *arrow.Schema) error {
	if err := d.Ensure(ctx, tx, sink.Target{Table: table}, schema); err != nil {
		return err
	}
	kind := func(name string) idemtype.Type {
		return idemtype.TypeOf(schema.Field(schema.FieldIndices(name)[0]))
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
