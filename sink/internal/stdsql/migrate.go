package stdsql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemport/idemport/sink"
)

// CreateVersions implements sink.Driver.CreateVersions in standard SQL.
func CreateVersions(ctx context.Context, q sink.Querier, table string) error {
	_, err := q.ExecContext(ctx, CreateVersionsSQL(table))
	return err
}

// CreateVersionsSQL is the statement of CreateVersions: it creates the
// versions table named table unless it exists.
func CreateVersionsSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
		component  TEXT NOT NULL,
		version    INTEGER NOT NULL,
		applied_at TEXT NOT NULL,
		PRIMARY KEY (component, version))`
}

// Versions implements sink.Driver.Versions in standard SQL.
func Versions(ctx context.Context, q sink.Querier, table, component string) ([]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT component, version FROM `+table)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var c string
		var v int
		if err := rows.Scan(&c, &v); err != nil {
			return nil, err
		}
		if c == component {
			out = append(out, v)
		}
	}
	return out, rows.Err()
}

// VersionRecorded implements sink.Driver.VersionRecorded in standard SQL.
func VersionRecorded(ctx context.Context, q sink.Querier, d sink.Driver, table, component string, version int) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, d.Rebind(`SELECT count(*) FROM `+table+` WHERE component = ? AND version = ?`), component, version).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// RecordVersion implements sink.Driver.RecordVersion in standard SQL; the
// time is stored as RFC 3339 text in UTC, to the second.
func RecordVersion(ctx context.Context, q sink.Querier, d sink.Driver, table, component string, version int, at time.Time) error {
	_, err := q.ExecContext(ctx, d.Rebind(`INSERT INTO `+table+` (component, version, applied_at) VALUES (?, ?, ?)`), component, version, at.UTC().Format("2006-01-02T15:04:05Z"))
	return err
}

// RecordVersionsSQL is the INSERT that records the migrations applied at
// at into the versions table (components[i] at versions[i]), with quote
// the driver's string literal: the last statement of a driver's
// migrate.Together message.
func RecordVersionsSQL(table string, components []string, versions []int, at time.Time, quote func(string) string) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO ` + table + ` (component, version, applied_at) VALUES `)
	when := quote(at.UTC().Format("2006-01-02T15:04:05Z"))
	for i, v := range versions {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %d, %s)", quote(components[i]), v, when)
	}
	return b.String()
}
