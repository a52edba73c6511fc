package ops

import (
	"context"
	"time"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
)

// Outbox lists the outbox's deliveries (of state only, unless empty),
// oldest event first; an event owed to no sink is listed once with an empty
// sink. An Operator without a database has none.
func (o *Operator) Outbox(ctx context.Context, state string) ([]ledger.Delivery, error) {
	if !o.st.Exists() {
		return nil, nil
	}
	if ok, err := o.st.Driver.TableExists(ctx, o.st.DB, o.st.Prefix+"outbox"); err != nil || !ok {
		return nil, err
	}
	return o.st.Ledger.Deliveries(ctx, o.st.DB, state)
}

// Deliver sends the events the outbox owes to the Operator's sinks
// (pipeline.Options.Notify): those recorded by this process's undos and
// replays, and those earlier runs left undelivered. It tries each again
// with backoff until it is delivered, refused for good, or timeout (0
// means pipeline.DefaultNotifyTimeout) has passed; each delivery is leased
// while it is tried, so two processes never send one at once. A failed
// delivery is an error only in the report: err is for the ledger, or
// pipeline.ErrNoDatabase. It is the same pass pipeline's ImportAll runs.
func (o *Operator) Deliver(ctx context.Context, timeout time.Duration) (pipeline.DeliveryReport, error) {
	return o.st.Deliver(ctx, timeout)
}

// PendingDeliveries counts the deliveries the outbox still owes, to any
// sink (refused ones not included).
func (o *Operator) PendingDeliveries(ctx context.Context) (int64, error) {
	return o.st.PendingDeliveries(ctx)
}

// EventState says how far event id is delivered: "delivered" when every
// sink it is owed to acknowledged it, "failed" when a sink refused it for
// good, else "pending". It is "" for an event owed to no sink.
func (o *Operator) EventState(ctx context.Context, id string) (string, error) {
	return o.st.EventState(ctx, id)
}
