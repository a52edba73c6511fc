package postgres

import (
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestColumnsVersionChangesWithTheColumns: ColumnsVersion stays the same
// while nothing changes the table (rows written, other tables changed),
// and changes with every change of the columns or keys Describe reads,
// committed by another transaction: a column added, widened, renamed,
// made NOT NULL or given a default, a unique index created or dropped,
// the table dropped and made again under its name with other columns. A
// missing table is "".
func TestColumnsVersionChangesWithTheColumns(t *testing.T) {
	db, _ := pgtest.Open(t)
	s := drivertest.Stmt
	drivertest.ColumnsVersion(t, db, Driver{},
		`CREATE TABLE t (id bigint PRIMARY KEY, n bigint, s text)`,
		[]drivertest.Step{
			s("rows written", `INSERT INTO t VALUES (1, 2, 'x'); UPDATE t SET n = 3`),
			s("another table changed", `CREATE TABLE other (a int); ALTER TABLE other ADD COLUMN b int; CREATE UNIQUE INDEX ON other (a)`),
			s("analyzed", `ANALYZE t`),
		},
		[]drivertest.Step{
			s("column widened without a rewrite", `ALTER TABLE t ALTER COLUMN s TYPE varchar(10)`),
			s("column renamed", `ALTER TABLE t RENAME COLUMN added TO renamed`),
			s("NOT NULL", `ALTER TABLE t ALTER COLUMN s SET NOT NULL`),
			s("default", `ALTER TABLE t ALTER COLUMN renamed SET DEFAULT 7`),
			s("unique index", `CREATE UNIQUE INDEX t_s ON t (s)`),
			s("unique index dropped", `DROP INDEX t_s`),
			s("column dropped", `ALTER TABLE t DROP COLUMN renamed`),
			s("table made again", `DROP TABLE t; CREATE TABLE t (id bigint PRIMARY KEY, n numeric, s varchar(10) NOT NULL)`),
		})
}
