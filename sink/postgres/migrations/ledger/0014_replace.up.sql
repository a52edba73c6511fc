-- Corrected files (--replace): an operation that replaces the completed
-- earlier version of its (table, file ID) records that version's content
-- digest, so that every attempt of it, whatever flags it is run with,
-- finishes the replacement (removes the earlier version's rows). The
-- earlier version moves to operations_past as 'replaced', with the content
-- digest of the version that replaced it.
ALTER TABLE {{prefix}}operations ADD COLUMN replaces text;
ALTER TABLE {{prefix}}operations_past ADD COLUMN replaced_by text;
