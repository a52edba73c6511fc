-- Rows not applied because a later row of the same file has the same key.
ALTER TABLE {{prefix}}operations ADD COLUMN rows_superseded bigint NOT NULL DEFAULT 0;
ALTER TABLE {{prefix}}attempts ADD COLUMN rows_superseded bigint NOT NULL DEFAULT 0;
