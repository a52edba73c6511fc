// Package dialect holds the few facts about SQL that differ between the
// databases idemport writes to, so that ledger, checkpoint and sink can share
// one spelling of their statements.
package dialect

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Dialect is a database family. The zero value is SQLite.
type Dialect int

// The supported dialects.
const (
	SQLite Dialect = iota
	Postgres
)

func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// Rebind rewrites the ? placeholders of q into the dialect's style. Question
// marks inside quoted strings or identifiers are left alone.
func (d Dialect) Rebind(q string) string {
	if d != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Now is an SQL expression for the database's current time in Unix
// milliseconds. Leases are judged by the database's clock, so that hosts
// whose clocks disagree still agree on who holds a lease.
func (d Dialect) Now() string {
	if d == Postgres {
		return "(floor(extract(epoch from clock_timestamp()) * 1000))::bigint"
	}
	return "CAST(unixepoch('subsec') * 1000 AS INTEGER)"
}

// Quote quotes an identifier. A dotted name is quoted part by part, so
// "sales.orders" names table orders in schema sales.
func Quote(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// QuoteOne quotes a single identifier, dots included.
func QuoteOne(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteList quotes each name with QuoteOne, prefixed (e.g. "excluded."),
// and joins them with commas.
func QuoteList(names []string, prefix string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + QuoteOne(n)
	}
	return strings.Join(out, ", ")
}

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Querier = (*sql.DB)(nil)
	_ Querier = (*sql.Conn)(nil)
	_ Querier = (*sql.Tx)(nil)
)

// TableExists reports whether the table named by a possibly quoted,
// possibly schema-qualified name exists.
func (d Dialect) TableExists(ctx context.Context, q Querier, name string) (bool, error) {
	var ok bool
	var err error
	if d == Postgres {
		err = q.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, name).Scan(&ok)
	} else {
		err = q.QueryRowContext(ctx, `SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?`, strings.Trim(name, `"`)).Scan(&ok)
	}
	return ok, err
}

// SchemaPrefix returns the table prefix that places idemport's tables in the
// PostgreSQL schema named schema: the quoted schema and a dot, as in
// `"idemport".`.
func SchemaPrefix(schema string) string { return QuoteOne(schema) + "." }

// CreateSchema creates the schema named schema when it does not exist, so
// that migrations can place tables in it. It does nothing on SQLite, whose
// tables are placed by a name prefix instead. Concurrent callers are safe: a
// caller that loses the race to create the schema finds it created. Run it
// outside a transaction (q a *sql.DB or *sql.Conn): a lost race would abort
// the transaction.
func (d Dialect) CreateSchema(ctx context.Context, q Querier, schema string) error {
	if d != Postgres {
		return nil
	}
	_, err := q.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+QuoteOne(schema))
	if err == nil {
		return nil
	}
	// Two sessions that both found the schema missing both try to create
	// it, and the loser fails on the catalog's unique index.
	var ok bool
	if qerr := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); qerr == nil && ok {
		return nil
	}
	return fmt.Errorf("create schema %s: %w", schema, err)
}
