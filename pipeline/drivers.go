package pipeline

import (
	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/mysql"
	"github.com/idemport/idemport/sink/postgres"
	"github.com/idemport/idemport/sink/sqlite"
)

// Drivers is the registry of the databases idemport writes to: SQLite,
// PostgreSQL, and MariaDB or MySQL (mysql://, mariadb://). SQLite comes
// first: it is the embedded default, given bare paths. This is the only
// place outside the command that names a driver.
func Drivers() sink.Registry {
	return sink.Registry{sqlite.Driver{}, postgres.Driver{}, mysql.Driver{}}
}

// Every driver serves the ledger and the checkpoints.
var (
	_ ledger.Driver     = sink.Driver(nil)
	_ checkpoint.Driver = sink.Driver(nil)
)
