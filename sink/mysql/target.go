package mysql

import (
	"context"
	"database/sql"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/sink"
)

// errTarget is the error of the target-table operations this driver does
// not have yet (see the package documentation): the driver is not in the
// registry, so no command reaches them.
var errTarget = &sink.ConfigError{Err: errors.New("MariaDB/MySQL target tables are not supported yet")}

// Writer implements sink.Driver; not yet (errTarget).
func (Driver) Writer(context.Context, *sql.Conn, sink.Target, *arrow.Schema) (sink.Writer, error) {
	return nil, errTarget
}

// Limits implements sink.Driver: at most 1,017 columns in an InnoDB table,
// of which the lineage columns take 2; names of at most 64 bytes; a dotted
// name is database.table; column names fold case.
func (Driver) Limits() sink.Limits {
	return sink.Limits{MaxColumns: 1017, Reserved: 2, MaxNameBytes: 64, QualifiedNames: true, FoldsCase: true, Rules: valueRules}
}
