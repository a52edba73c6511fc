package idemtype

import (
	"context"
	"errors"
)

// ErrPermanent marks a delivery an EventSink refused for good (an HTTP 4xx
// other than 409): retrying it would be refused again.
var ErrPermanent = errors.New("refused by the sink")

// EventMessage is one event to deliver: its ID, the idempotency key of
// every delivery of it, and its JSON body.
type EventMessage struct {
	ID   string
	Body []byte
}

// EventSink is where events go: a NATS subject, an HTTP endpoint, a
// command, or anything else that accepts them. Deliver returns nil once the
// sink acknowledged m; an error wrapping ErrPermanent when it refused m for
// good; any other error when m may be tried again. Implementations are
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
