-- The live rows a snapshot's scope held before the operation wrote any:
-- what its --max-delete guard measures the sweep against. Counted by the
-- first transaction that writes, so partitions committed before and
-- attempts resumed later count against the same number.
ALTER TABLE {{prefix}}operations ADD COLUMN scope_rows INTEGER;
