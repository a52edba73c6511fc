package ledger

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/idemport/idemport/idemtype"
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

// together is internal/migrate's interface of a driver that applies
// several migrations in one transaction; watchedTogether keeps it, so
// that watching the look-up does not change how the migrations are sent.
type together interface {
	ApplyTogether(ctx context.Context, db *sql.DB, table string, components []string, versions []int, bodies []string, at time.Time) error
}

// watchedTogether is watched for a driver that applies migrations
// together.
type watchedTogether struct {
	*watched
	t together
}

// ApplyTogether is the driver's.
func (w watchedTogether) ApplyTogether(ctx context.Context, db *sql.DB, table string, components []string, versions []int, bodies []string, at time.Time) error {
	return w.t.ApplyTogether(ctx, db, table, components, versions, bodies, at)
}
