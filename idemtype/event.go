package idemtype

import (
	"context"
	"errors"
)

// ErrPermanent marks a delivery an EventSink refused for good (an HTTP 4xx
// other than 409): retrying it would be refused again.
var ErrPermanent = errors.New("refused by the sink")

// ErrMisconfigured marks a delivery the sink cannot take until it is set
// up otherwise (a NATS subject no JetStream stream captures): trying again
// soon would fail the same way, so a delivery pass stops trying that sink
// at once. Unlike ErrPermanent, the delivery stays owed: a later pass
// tries it again.
var ErrMisconfigured = errors.New("the sink is not set up to take it")

// EventMessage is one event to deliver: its ID, the idempotency key of
// every delivery of it, and its JSON body.
type EventMessage struct {
	ID   string
	Body []byte
}

// EventSink is where events go: a NATS subject, an HTTP endpoint, a
// command, or anything else that accepts them. Deliver returns nil once the
// sink acknowledged m; an error wrapping ErrPermanent when it refused m for
// good; one wrapping ErrMisconfigured when no try can succeed before the
// sink is set up otherwise; any other error when m may be tried again. Implementations are
// safe for use by one goroutine at a time.
type EventSink interface {
	// ID identifies the sink by a digest of its full address: stable across
	// runs, and holding no secret.
	ID() string
	// Name is the sink's address with its secrets masked, to show.
	Name() string
	Deliver(ctx context.Context, m EventMessage) error
	// Close releases the sink's connections.
	Close() error
}
