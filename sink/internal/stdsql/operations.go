package stdsql

import (
	"context"
	"database/sql"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// Operations is the operations of sink.Driver written here, for the
// driver D to embed: type Driver struct{ stdsql.Operations[Driver] }.
// Its methods are then D's, each spelled by a zero D (Rebind, Quote,
// Describe…: a driver holds no state), so that an operation D declares
// itself, where its database spells it apart, replaces the embedded one,
// and the embedded ones still call D's own methods. An overriding method
// may call the functions here (Merge, SweepApply…) for what it keeps.
type Operations[D sink.Driver] struct{}

// Ledger implements sink.Driver.Ledger with the shared statements.
func (Operations[D]) Ledger(prefix string) ledger.Ops {
	var d D
	return Ledger{S: d, Prefix: prefix}
}

// Checkpoints implements sink.Driver.Checkpoints with the shared
// statements.
func (Operations[D]) Checkpoints(prefix string) checkpoint.Ops {
	var d D
	return Checkpoints{S: d, Prefix: prefix}
}

// Savepoint implements sink.Driver.Savepoint (Savepoint).
func (Operations[D]) Savepoint(ctx context.Context, tx *sql.Tx, name string) error {
	return Savepoint(ctx, tx, name)
}

// ReleaseSavepoint implements sink.Driver.ReleaseSavepoint
// (ReleaseSavepoint).
func (Operations[D]) ReleaseSavepoint(ctx context.Context, tx *sql.Tx, name string) error {
	return ReleaseSavepoint(ctx, tx, name)
}

// RollbackToSavepoint implements sink.Driver.RollbackToSavepoint
// (RollbackToSavepoint).
func (Operations[D]) RollbackToSavepoint(ctx context.Context, tx *sql.Tx, name string) error {
	return RollbackToSavepoint(ctx, tx, name)
}

// DropTable implements sink.Driver.DropTable (DropTable), the name
// quoted by D.QuoteTable.
func (Operations[D]) DropTable(ctx context.Context, tx *sql.Tx, name string) error {
	var d D
	return DropTable(ctx, tx, d.QuoteTable(name))
}

// Merge implements sink.Driver.Merge (Merge), the new rows counted
// before the upsert: for a database whose write transactions exclude each
// other.
func (Operations[D]) Merge(ctx context.Context, tx *sql.Tx, tg sink.Target, stage string, columns []string) (staged, fresh, written int64, err error) {
	var d D
	return Merge(ctx, tx, d, tg, stage, columns, "", false)
}

// Classify implements sink.Driver.Classify (Classify).
func (Operations[D]) Classify(ctx context.Context, tx *sql.Tx, tg sink.Target, stage string, columns []string, group string) (map[int64]idemtype.Rows, error) {
	var d D
	return Classify(ctx, tx, d, tg, stage, columns, group, false)
}

// SweepCount implements sink.Driver.SweepCount (SweepCount).
func (Operations[D]) SweepCount(ctx context.Context, q sink.Querier, s sink.Sweep) (missing, live int64, err error) {
	return SweepCount(ctx, q, s)
}

// SweepLive implements sink.Driver.SweepLive (SweepLive).
func (Operations[D]) SweepLive(ctx context.Context, q sink.Querier, s sink.Sweep) (int64, error) {
	return SweepLive(ctx, q, s)
}

// SweepApply implements sink.Driver.SweepApply (SweepApply).
func (Operations[D]) SweepApply(ctx context.Context, tx *sql.Tx, s sink.Sweep, now any) (int64, error) {
	return SweepApply(ctx, tx, s, now)
}

// SweepUnmark implements sink.Driver.SweepUnmark (SweepUnmark).
func (Operations[D]) SweepUnmark(ctx context.Context, tx *sql.Tx, s sink.Sweep, mark any) (int64, error) {
	return SweepUnmark(ctx, tx, s, mark)
}

// SweepKeys implements sink.Driver.SweepKeys (SweepKeys).
func (Operations[D]) SweepKeys(ctx context.Context, q sink.Querier, s sink.Sweep, each func(key []sql.NullString) error) error {
	return SweepKeys(ctx, q, s, each)
}

// CountFile implements sink.Driver.CountFile (CountFile).
func (Operations[D]) CountFile(ctx context.Context, q sink.Querier, table string, fileKey int64) (int64, error) {
	var d D
	return CountFile(ctx, q, d, table, fileKey)
}

// Compare implements sink.Driver.Compare (Compare).
func (Operations[D]) Compare(ctx context.Context, q sink.Querier, c sink.Comparison, each func(sink.Differing) error) (int64, error) {
	var d D
	return Compare(ctx, q, d, c, each)
}

// EnsureDeleted implements sink.Driver.EnsureDeleted (EnsureDeleted).
func (Operations[D]) EnsureDeleted(ctx context.Context, tx *sql.Tx, table string) error {
	var d D
	return EnsureDeleted(ctx, tx, d, table)
}

// EnsureSeen implements sink.Driver.EnsureSeen (EnsureSeen).
func (Operations[D]) EnsureSeen(ctx context.Context, tx *sql.Tx, table, target string, key []string, schema *arrow.Schema) error {
	var d D
	return EnsureSeen(ctx, tx, d, table, target, key, schema)
}

// ForgetOrdinals implements sink.Driver.ForgetOrdinals (ForgetOrdinals).
func (Operations[D]) ForgetOrdinals(ctx context.Context, tx *sql.Tx, table string, fileKey int64) (int64, error) {
	var d D
	return ForgetOrdinals(ctx, tx, d, table, fileKey)
}

// CreateVersions implements sink.Driver.CreateVersions (CreateVersions).
func (Operations[D]) CreateVersions(ctx context.Context, q sink.Querier, table string) error {
	return CreateVersions(ctx, q, table)
}

// Versions implements sink.Driver.Versions (Versions).
func (Operations[D]) Versions(ctx context.Context, q sink.Querier, table, component string) ([]int, error) {
	return Versions(ctx, q, table, component)
}

// VersionRecorded implements sink.Driver.VersionRecorded
// (VersionRecorded).
func (Operations[D]) VersionRecorded(ctx context.Context, q sink.Querier, table, component string, version int) (bool, error) {
	var d D
	return VersionRecorded(ctx, q, d, table, component, version)
}

// RecordVersion implements sink.Driver.RecordVersion (RecordVersion).
func (Operations[D]) RecordVersion(ctx context.Context, q sink.Querier, table, component string, version int, at time.Time) error {
	var d D
	return RecordVersion(ctx, q, d, table, component, version, at)
}
