package ledger

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/migrate"
)

// watched is the ledger's driver as MigrateSeen hands it to the
// migrations: the first look-up of the versions table is told to seen.
type watched struct {
	idemtype.Migrator
	table string
	seen  func(exists bool)
	once  sync.Once
}

// TableExists looks name up as the driver does and, the first time name
// is the versions table and the look-up succeeds, tells seen the answer.
func (w *watched) TableExists(ctx context.Context, q idemtype.Querier, name string) (bool, error) {
	ok, err := w.Migrator.TableExists(ctx, q, name)
	if err == nil && name == w.table {
		w.once.Do(func() { w.seen(ok) })
	}
	return ok, err
}

// watchedTogether is watched for a driver that applies migrations
// together.
type watchedTogether struct {
	*watched
	t migrate.Together
}

// ApplyTogether is the driver's.
func (w watchedTogether) ApplyTogether(ctx context.Context, db *sql.DB, table string, components []string, versions []int, bodies []string, at time.Time) error {
	return w.t.ApplyTogether(ctx, db, table, components, versions, bodies, at)
}
