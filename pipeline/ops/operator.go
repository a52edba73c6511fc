package ops

import (
	"cmp"
	"context"
	"errors"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/sink"
)

// Operator is an open target database on which the operator's commands
// run. It is safe for concurrent use, and with imports running on the
// same target.
type Operator struct {
	st *store.Store
}

// Open opens the target named by dsn (pipeline.DefaultDSN when empty) as
// pipeline.Open does, with the same options and errors: a DSN or build no
// driver can serve is a *pipeline.UsageError; a read-only open of a
// missing database is pipeline.ErrNoDatabase unless o.AllowMissing, when
// the Operator has no database ([Operator.Exists]), finds no operations
// ([Operator.Status]) and returns ErrNoDatabase from its other methods.
func Open(ctx context.Context, dsn string, o pipeline.Options) (*Operator, error) {
	if o.Drivers == nil {
		o.Drivers = pipeline.Drivers()
	}
	st, err := store.Open(ctx, cmp.Or(dsn, pipeline.DefaultDSN), store.Options{ReadOnly: o.ReadOnly, AllowMissing: o.AllowMissing,
		Logger: o.Logger, Failpoints: o.Failpoints, BusyTimeout: o.BusyTimeout,
		StateSchema: cmp.Or(o.StateSchema, pipeline.DefaultStateSchema), Notify: o.Notify, Drivers: o.Drivers})
	if ce := (*sink.ConfigError)(nil); errors.As(err, &ce) {
		return nil, &pipeline.UsageError{Err: ce.Err}
	} else if err != nil {
		return nil, err
	}
	return &Operator{st: st}, nil
}

// Close closes the database.
func (o *Operator) Close() error { return o.st.Close() }

// Exists reports whether the database exists: false only for an Operator
// opened with pipeline.Options.AllowMissing where there was none.
func (o *Operator) Exists() bool { return o.st.Exists() }

// Name returns the target as shown to users.
func (o *Operator) Name() string { return o.st.Name }

// Operations returns the current operations of a file (given as a path,
// which is hashed, or as a file ID), or an error when there are none.
func (o *Operator) Operations(ctx context.Context, fileOrID string, table string) ([]ledger.Operation, error) {
	return o.st.Operations(ctx, fileOrID, table)
}
