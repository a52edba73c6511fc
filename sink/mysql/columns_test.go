package mysql

import (
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestColumnsVersionChangesWithTheColumns: ColumnsVersion stays the same
// while nothing changes the table's columns (rows written, the
// auto-increment counter moved, another table changed), and changes with
// every change of the columns, checks or keys Describe reads, committed by
// another connection: a column added, widened, renamed, made NOT NULL,
// given a default or a comment, a check, a unique key made or dropped,
// the table dropped and made again under its name with other columns. A
// missing table is "".
func TestColumnsVersionChangesWithTheColumns(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	s := drivertest.Stmt
	drivertest.ColumnsVersion(t, db, Driver{},
		`CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, n BIGINT, s VARCHAR(20))`,
		[]drivertest.Step{
			s("rows written", `INSERT INTO t (n, s) VALUES (2, 'x'), (3, 'y')`),
			s("rows updated", `UPDATE t SET n = 4 WHERE n = 2`),
			s("another table changed", `CREATE TABLE other (a INT)`),
			s("another table's column added", `ALTER TABLE other ADD COLUMN b INT`),
			s("analyzed", `ANALYZE TABLE t`),
		},
		[]drivertest.Step{
			s("column widened in place", `ALTER TABLE t MODIFY COLUMN s VARCHAR(30)`),
			s("column renamed", `ALTER TABLE t RENAME COLUMN added TO renamed`),
			s("NOT NULL", `ALTER TABLE t MODIFY COLUMN s VARCHAR(30) NOT NULL`),
			s("default", `ALTER TABLE t ALTER COLUMN renamed SET DEFAULT 7`),
			s("comment", `ALTER TABLE t MODIFY COLUMN renamed BIGINT DEFAULT 7 COMMENT 'idemport:decimal'`),
			s("check", `ALTER TABLE t ADD CONSTRAINT positive CHECK (renamed > 0)`),
			s("unique key", `CREATE UNIQUE INDEX t_s ON t (s)`),
			s("unique key dropped", `DROP INDEX t_s ON t`),
			s("column dropped", `ALTER TABLE t DROP COLUMN renamed`),
			s("table dropped", `DROP TABLE t`),
			s("table made again", `CREATE TABLE t (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, n MEDIUMTEXT, s VARCHAR(30) NOT NULL)`),
		})
}
