-- Every snapshot applied to a (table, scope), not only the last: undoing the
-- last one makes the one before it current again, for staleness and for
-- --reapply. marked_at is the deletion mark a soft sweep set (Unix
-- microseconds), so that undoing it can clear exactly those marks.
CREATE TABLE {{prefix}}snapshots_by_file (
    table_name  TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    file_id     TEXT    NOT NULL,
    as_of       INTEGER NOT NULL,
    applied_at  INTEGER NOT NULL,
    marked_at   INTEGER,
    PRIMARY KEY (table_name, scope, file_id)
);
INSERT INTO {{prefix}}snapshots_by_file (table_name, scope, file_id, as_of, applied_at)
    SELECT table_name, scope, file_id, as_of, applied_at FROM {{prefix}}snapshots;
DROP TABLE {{prefix}}snapshots;
ALTER TABLE {{prefix}}snapshots_by_file RENAME TO {{prefix}}snapshots;
