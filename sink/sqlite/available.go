package sqlite

import (
	"errors"

	"github.com/idemport/idemport/sink"
)

// ErrNoSQLite is what a build without cgo reports when asked for SQLite:
// the SQLite engine is C code, compiled in through cgo.
var ErrNoSQLite = errors.New("this build has no SQLite: build with cgo and a C compiler")

// Limits implements sink.Dialect: SQLITE_MAX_COLUMN (2000, as compiled)
// columns per table, of which idemport needs 3 (the lineage columns, and
// the batch table's batch column beside its copies of them), names of any
// length, compared without regard to ASCII case.
func (Dialect) Limits() sink.Limits {
	return sink.Limits{MaxColumns: 2000, Reserved: 3, FoldsCase: true}
}
