-- The rows of each partition that a later row of the same file supersedes:
-- their number, and their ordinals (differences from the partition's first
-- ordinal, as unsigned varints; NULL when there are none). The plan pass
-- decides them once; every attempt skips the same rows.
ALTER TABLE {{prefix}}partitions ADD COLUMN superseded bigint NOT NULL DEFAULT 0;
ALTER TABLE {{prefix}}partitions ADD COLUMN superseded_rows bytea;
