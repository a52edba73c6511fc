package main

import (
	"strings"
	"testing"
)

// TestMariaFileAnchor checks the anchor's table and LOAD DATA columns for a
// -file data set: the plan's types as idemport declares them, a text key
// indexable whole, and the fields other than text read so that an empty
// one is NULL.
func TestMariaFileAnchor(t *testing.T) {
	e := &env{keyCol: "id", cols: []column{{"id", "string"}, {"n", "int64"}, {"ok", "bool"}, {"at", "timestamp"}, {"amount", "decimal"}, {"doc", "json"}}}
	table := e.mariaTable("bench_load")
	want := "CREATE TABLE bench_load(`id` VARCHAR(768) NOT NULL, `n` BIGINT, `ok` BOOLEAN, `at` DATETIME(6), `amount` MEDIUMTEXT, `doc` LONGTEXT, PRIMARY KEY (`id`))"
	if table != want {
		t.Errorf("mariaTable:\n got %s\nwant %s", table, want)
	}
	cols, set := e.mariaColumns()
	if got, want := strings.Join(cols, ", "), "`id`, @v2, @v3, @v4, @v5, `doc`"; got != want {
		t.Errorf("columns: got %s, want %s", got, want)
	}
	for i, want := range []string{
		"`n` = NULLIF(@v2, '')",
		"`ok` = CASE LOWER(@v3) WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE NULLIF(@v3, '') END",
		"`at` = REPLACE(REPLACE(NULLIF(@v4, ''), 'T', ' '), 'Z', '')",
		"`amount` = NULLIF(@v5, '')",
	} {
		if i >= len(set) || set[i] != want {
			t.Errorf("SET %d: got %q, want %q", i, set, want)
		}
	}
	e.keyCol = ""
	if table := e.mariaTable("t"); strings.Contains(table, "PRIMARY KEY") || strings.Contains(table, "NOT NULL") {
		t.Errorf("without -key: %s", table)
	}
}

// TestMariaMergeAnchor checks the hand-written merge of the delta section
// on MariaDB: the delta loaded into a temporary table like the anchor's,
// then every column but the key taken from it on a duplicate key.
func TestMariaMergeAnchor(t *testing.T) {
	e := &env{keyCol: "id", cols: []column{{"id", "int64"}, {"name", "string"}, {"n", "int64"}}}
	m := mariaTarget{e: e}
	got := m.mergeSQL("/data/delta.csv")
	for _, want := range []string{
		"CREATE TEMPORARY TABLE d LIKE bench_load; LOAD DATA LOCAL INFILE '/data/delta.csv' INTO TABLE d CHARACTER SET utf8mb4",
		"; INSERT INTO bench_load SELECT * FROM d ON DUPLICATE KEY UPDATE `name` = VALUES(`name`), `n` = VALUES(`n`)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("mergeSQL:\n%s\nwants\n%s", got, want)
		}
	}
	if !strings.HasSuffix(got, "VALUES(`n`)") {
		t.Errorf("mergeSQL ends after the merge: %s", got)
	}
}
