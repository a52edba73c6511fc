package pipeline

import "github.com/idemport/idemport/pipeline/internal/store"

// The kinds of event idemport records in its outbox.
const (
	EventCompleted = store.EventCompleted // an operation completed (imported, resumed or reapplied)
	EventUndone    = store.EventUndone    // `idemport undo` retracted or forgot an operation
	EventReplayed  = store.EventReplayed  // corrected rejects were applied to an operation
)

// EventSchemaVersion is the version of the event payload's schema. It
// changes only when a field changes meaning or goes away; fields may be
// added within a version.
const EventSchemaVersion = store.EventSchemaVersion

// EventID returns the ID of the event of kind caused by attempt. It is the
// same however often it is computed, so every delivery of one event
// carries one ID, and two attempts never share one.
func EventID(attempt, kind string) string { return store.EventID(attempt, kind) }

// Event is the JSON payload of an event, as delivered.
type Event = store.Event

// EventOperation is the operation an event is about.
type EventOperation = store.EventOperation

// DeliveryReport says what a delivery pass did: deliveries made, refused
// for good, still owed, and the last error of each sink that failed.
type DeliveryReport = store.DeliveryReport

// DefaultNotifyTimeout bounds a delivery pass when none is given.
const DefaultNotifyTimeout = store.DefaultNotifyTimeout
