-- Rows not applied because another row of the same file with the same key
-- wins over them (the later one, or the one with the newer version).
ALTER TABLE {{prefix}}operations ADD COLUMN rows_superseded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {{prefix}}attempts ADD COLUMN rows_superseded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE {{prefix}}operations_past ADD COLUMN rows_superseded INTEGER NOT NULL DEFAULT 0;
