-- The last snapshot applied to each (table, scope): a snapshot import whose
-- as-of time is older is stale and writes nothing, so a rerun of last
-- week's full extract cannot delete this week's rows.
CREATE TABLE {{prefix}}snapshots (
    table_name  text    NOT NULL,
    scope       text    NOT NULL,
    as_of       bigint  NOT NULL,
    file_id     text    NOT NULL,
    applied_at  bigint  NOT NULL,
    PRIMARY KEY (table_name, scope)
);

-- What an attempt changed beyond rows: the rows a snapshot sweep removed,
-- and the schema changes (--evolve) it made, shown by history.
ALTER TABLE {{prefix}}attempts ADD COLUMN rows_deleted bigint NOT NULL DEFAULT 0;
ALTER TABLE {{prefix}}attempts ADD COLUMN schema_changes text;
