package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// stageJSONSQL lists the columns of the staging table $2 of type jsonb
// whose column of the table $1 is json.
const stageJSONSQL = `SELECT s.attname FROM pg_attribute s
JOIN pg_attribute t ON t.attrelid = to_regclass($1) AND t.attname = s.attname AND NOT t.attisdropped AND t.atttypid = 'json'::regtype
WHERE s.attrelid = to_regclass($2) AND s.attnum > 0 AND NOT s.attisdropped AND s.atttypid = 'jsonb'::regtype
ORDER BY s.attnum`

// stageJSON gives the columns of stage that the table target holds as
// json the type json (Ensure made them jsonb): the move then stores the
// file's text, as a plain import does, not jsonb's rewrite of it (keys
// sorted, spacing, the last of a repeated key). The stage is empty.
func stageJSON(ctx context.Context, tx *sql.Tx, target, stage string) error {
	rows, err := tx.QueryContext(ctx, stageJSONSQL, quoteTable(target), quoteTable(stage))
	if err != nil {
		return fmt.Errorf("read the json columns of %s: %w", target, err)
	}
	var alters []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("read the json columns of %s: %w", target, err)
		}
		alters = append(alters, "ALTER COLUMN "+q(name)+" TYPE json")
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the json columns of %s: %w", target, err)
	}
	if len(alters) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "ALTER TABLE "+quoteTable(stage)+" "+strings.Join(alters, ", ")); err != nil {
		return fmt.Errorf("give staging table %s the json columns of %s: %w", stage, target, err)
	}
	return nil
}
