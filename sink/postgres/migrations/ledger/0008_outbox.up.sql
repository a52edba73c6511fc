-- The transactional outbox: one row per event, written in the transaction
-- whose effect it announces (an operation completed, undone, or its rejects
-- replayed), so an event exists exactly when its effect committed. The
-- payload is the JSON delivered, fixed when the event is recorded.
CREATE TABLE {{prefix}}outbox (
    event_id    text    NOT NULL PRIMARY KEY,
    kind        text    NOT NULL,
    table_name  text    NOT NULL,
    file_id     text    NOT NULL,
    attempt_id  text    NOT NULL,
    payload     text    NOT NULL,
    created_at  bigint NOT NULL
);
CREATE INDEX outbox_created ON {{prefix}}outbox (created_at);

-- Deliveries: one row per (event, sink) the event is owed to. A sink is
-- known by a digest of its full address (its secrets never reach the
-- ledger) and shown by its masked address. A delivery is claimed with a
-- lease, like a partition, so two processes never send it at once.
CREATE TABLE {{prefix}}outbox_deliveries (
    event_id       text    NOT NULL,
    sink_id        text    NOT NULL,
    sink_name      text    NOT NULL,
    state          text    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    tries          bigint NOT NULL DEFAULT 0,
    last_error     text,
    next_at        bigint NOT NULL,
    lease_owner    text,
    lease_expires  bigint,
    delivered_at   bigint,
    PRIMARY KEY (event_id, sink_id)
);
CREATE INDEX outbox_deliveries_pending ON {{prefix}}outbox_deliveries (state, next_at);
