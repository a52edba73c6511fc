-- Every snapshot applied to a (table, scope), not only the last: undoing the
-- last one makes the one before it current again, for staleness and for
-- --reapply. marked_at is the deletion mark a soft sweep set (Unix
-- microseconds), so that undoing it can clear exactly those marks.
ALTER TABLE {{prefix}}snapshots DROP CONSTRAINT snapshots_pkey;
ALTER TABLE {{prefix}}snapshots ADD PRIMARY KEY (table_name, scope, file_id);
ALTER TABLE {{prefix}}snapshots ADD COLUMN marked_at bigint;
