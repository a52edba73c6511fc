package checkpoint_test

import (
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/storetest"
)

// The checkpoint statements are one spelling for every dialect: the
// conformance suite runs them on each database.

func TestStoreSQLite(t *testing.T) { storetest.RunCheckpoint(t, storetest.SQLite) }

func TestStorePostgres(t *testing.T) {
	pgtest.DSN(t) // skip once, not in every case
	storetest.RunCheckpoint(t, storetest.Postgres)
}
