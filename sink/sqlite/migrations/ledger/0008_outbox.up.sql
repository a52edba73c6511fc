-- The transactional outbox: one row per event, written in the transaction
-- whose effect it announces (an operation completed, undone, or its rejects
-- replayed), so an event exists exactly when its effect committed. The
-- payload is the JSON delivered, fixed when the event is recorded.
CREATE TABLE {{prefix}}outbox (
    event_id    TEXT    NOT NULL PRIMARY KEY,
    kind        TEXT    NOT NULL,
    table_name  TEXT    NOT NULL,
    file_id     TEXT    NOT NULL,
    attempt_id  TEXT    NOT NULL,
    payload     TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX {{prefix}}outbox_created ON {{prefix}}outbox (created_at);

-- Deliveries: one row per (event, sink) the event is owed to. A sink is
-- known by a digest of its full address (its secrets never reach the
-- ledger) and shown by its masked address. A delivery is claimed with a
-- lease, like a partition, so two processes never send it at once.
CREATE TABLE {{prefix}}outbox_deliveries (
    event_id       TEXT    NOT NULL,
    sink_id        TEXT    NOT NULL,
    sink_name      TEXT    NOT NULL,
    state          TEXT    NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    tries          INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT,
    next_at        INTEGER NOT NULL,
    lease_owner    TEXT,
    lease_expires  INTEGER,
    delivered_at   INTEGER,
    PRIMARY KEY (event_id, sink_id)
);
CREATE INDEX {{prefix}}outbox_deliveries_pending ON {{prefix}}outbox_deliveries (state, next_at);
