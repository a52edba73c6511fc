package ledger_test

import (
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/storetest"
)

// The ledger's statements are one spelling for every dialect: the
// conformance suite runs them on each database.

func TestStoreSQLite(t *testing.T) { storetest.RunLedger(t, storetest.SQLite) }

func TestStorePostgres(t *testing.T) {
	pgtest.DSN(t) // skip once, not in every case
	storetest.RunLedger(t, storetest.Postgres)
}
