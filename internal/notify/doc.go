// Package notify delivers idemport's events to the systems that wait for
// them: a NATS JetStream subject, an HTTP endpoint, or a command. Every
// delivery carries the event's ID as its idempotency key (Nats-Msg-Id,
// Idempotency-Key, IDEMPORT_EVENT_ID), so the receiver can recognise a
// redelivery; the outbox that decides what to deliver lives in the ledger
// and pipeline, not here.
package notify
