-- Corrected files (--replace): an operation that replaces the completed
-- earlier version of its (table, file ID) records that version's content
-- digest, and the earlier version moves to operations_past as 'replaced',
-- with the content digest of the version that replaced it. Numbered 14 as
-- on the other databases (the ledger reads these columns once version 14
-- is recorded). Idempotent (IF NOT EXISTS): each statement commits by
-- itself, before the version row.
ALTER TABLE {{prefix}}operations ADD COLUMN IF NOT EXISTS replaces VARCHAR(128);
ALTER TABLE {{prefix}}operations_past ADD COLUMN IF NOT EXISTS replaced_by VARCHAR(128);
