// Package migrate applies embedded, numbered SQL migrations. Each migration
// runs in a transaction together with the row that records it (its own, or
// where the driver can, one with the other migrations found missing), so a
// crash never leaves a version half applied.
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/idemport/idemport/idemtype"
)

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common; the same
// type as idemtype.Querier and sink.Querier.
type Querier = idemtype.Querier

// Driver is what migrating needs of the database's driver (a sink.Driver
// is one): its migration files, its catalogue, and the statements that
// create, read and write the table of applied versions. The order of the
// files and the handling of concurrent callers are this package's.
type Driver = idemtype.Migrator

// Apply runs, in order, the migrations of component that d provides and
// that are not yet recorded. Files are named NNNN_description.up.sql; every
// "{{prefix}}" in them becomes prefix, which places idemport's tables (as
// "idemport_" on SQLite, or a quoted schema and a dot on PostgreSQL).
// Applied versions are recorded in the table prefix+"migrations".
// Concurrent callers are safe: a version recorded by another process between
// the check and the insert makes this caller's transaction fail on the
// primary key, and Apply then re-reads and continues.
func Apply(ctx context.Context, db *sql.DB, d Driver, prefix, component string) error {
	table := prefix + "migrations"
	todo, err := missing(d, prefix, component, func() (map[int]bool, error) {
		return appliedSoon(ctx, db, d, table, component)
	})
	if err != nil || len(todo) == 0 {
		return err // the common case reads and writes nothing more
	}
	if err := createVersions(ctx, db, d, table); err != nil {
		return err
	}
	if t, ok := d.(Together); ok && len(todo) > 1 {
		var b batch
		b.add(component, todo)
		if b.apply(ctx, db, t, table) == nil {
			return nil
		}
		// Another process applied some of them first (its tables or
		// version rows conflict with these), or one failed: apply them
		// one at a time, which skips those recorded by now and tells
		// which failed.
	}
	return applyEach(ctx, db, d, table, component, todo)
}

// migration is one migration file and its version.
type migration struct {
	version int
	name    string
	body    string // its text, "{{prefix}}" replaced: set by missing
}

// missing returns the migrations of component that d provides and that
// applied, called once they are listed, does not return as recorded, in
// the order of their numbers, each with its text and its tables' prefix in
// place.
func missing(d Driver, prefix, component string, applied func() (map[int]bool, error)) ([]migration, error) {
	fsys, err := d.Migrations(component)
	if err != nil {
		return nil, fmt.Errorf("read %s migrations: %w", component, err)
	}
	ms, err := migrations(fsys, component)
	if err != nil {
		return nil, err
	}
	done, err := applied()
	if err != nil {
		return nil, err
	}
	var todo []migration
	for _, m := range ms {
		if done[m.version] {
			continue
		}
		body, err := fs.ReadFile(fsys, m.name)
		if err != nil {
			return nil, err
		}
		m.body = strings.ReplaceAll(string(body), "{{prefix}}", prefix)
		todo = append(todo, m)
	}
	return todo, nil
}

// migrations lists the migration files of fsys in the order of their
// numbers, which must differ.
func migrations(fsys fs.FS, component string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read %s migrations: %w", component, err)
	}
	var ms []migration
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".up.sql") {
			continue
		}
		v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		ms = append(ms, migration{version: v, name: e.Name()})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		// Two files of one number: the second would be taken as applied
		// with the first and never run.
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("%s migrations %s and %s have the same number", component, ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// appliedSoon reads the applied versions, trying again for a while while
// the database answers that it is locked.
func appliedSoon(ctx context.Context, db *sql.DB, d Driver, table, component string) (map[int]bool, error) {
	applied, err := appliedVersions(ctx, db, d, table, component)
	for try := 0; err != nil && try < 20 && ctx.Err() == nil; try++ {
		// A fresh SQLite file that another connection is switching to WAL
		// answers reads with "database is locked" at once, without its
		// busy timeout: try again shortly.
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
		applied, err = appliedVersions(ctx, db, d, table, component)
	}
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// createVersions creates the table of applied versions unless it exists.
func createVersions(ctx context.Context, db *sql.DB, d Driver, table string) error {
	if err := d.CreateVersions(ctx, db, table); err != nil {
		// On PostgreSQL, two sessions that both found the table missing
		// both create it, and the loser fails on the catalog's unique
		// index once the winner commits.
		if ok, terr := d.TableExists(ctx, db, table); terr != nil || !ok {
			return fmt.Errorf("create %s: %w", table, err)
		}
	}
	return nil
}

// applyEach applies the migrations todo of component one at a time, each
// in its own transaction, which skips it when another process recorded it
// first.
func applyEach(ctx context.Context, db *sql.DB, d Driver, table, component string, todo []migration) error {
	for _, m := range todo {
		if err := applyOne(ctx, db, d, table, component, m.version, m.body); err != nil {
			// Another process may have applied it first.
			again, rerr := appliedVersions(ctx, db, d, table, component)
			if rerr == nil && again[m.version] {
				continue
			}
			return fmt.Errorf("apply %s migration %s: %w", component, m.name, err)
		}
	}
	return nil
}

// Together is a Driver whose database can apply several migrations, of
// one component or more, with the rows that record them, in one message:
// on a fresh database that is one round trip instead of five and a commit
// per migration, which is what creating the ledger cost when the server
// waited for the CPU. ApplyTogether creates the versions table unless it
// exists, applies bodies in order (bodies[i] the text of version
// versions[i] of components[i]) and records each as applied at at, the
// records after every body: all or nothing where DDL is transactional
// (PostgreSQL: one transaction); where DDL commits by itself (MariaDB),
// a failure part-way records nothing and leaves what ran, which the
// driver's migrations must allow to run again.
type Together interface {
	ApplyTogether(ctx context.Context, db *sql.DB, table string, components []string, versions []int, bodies []string, at time.Time) error
}

// ApplyAll is Apply for each of components in turn, which share the
// versions table prefix+"migrations". Where the driver applies migrations
// together, it first reads what is applied of them all and sends
// everything missing of every component, with the creation of the
// versions table, in one transaction: a fresh database costs the read and
// one round trip. Concurrent callers are safe as with Apply: a table or
// version row that another process created first makes that transaction
// fail whole, and ApplyAll then applies each component as Apply does,
// which re-reads and applies only what is still missing.
func ApplyAll(ctx context.Context, db *sql.DB, d Driver, prefix string, components ...string) error {
	t, ok := d.(Together)
	if !ok {
		return applyApart(ctx, db, d, prefix, components)
	}
	table := prefix + "migrations"
	exists, err := d.TableExists(ctx, db, table)
	if err != nil {
		return fmt.Errorf("read %s: %w", table, err)
	}
	var b batch
	for _, component := range components {
		todo, err := missing(d, prefix, component, func() (map[int]bool, error) {
			return recorded(ctx, db, d, table, component, exists)
		})
		if err != nil {
			return err
		}
		b.add(component, todo)
	}
	if len(b.versions) == 0 {
		return nil // the common case reads and writes nothing more
	}
	if err := b.apply(ctx, db, t, table); err == nil {
		return nil
	}
	// Another process applied some of them first (its tables or version
	// rows conflict with these), or one failed: apply each component on
	// its own, which tells which.
	return applyApart(ctx, db, d, prefix, components)
}

// batch is migrations to apply in one transaction: ApplyTogether's
// components, versions and bodies.
type batch struct {
	components []string
	versions   []int
	bodies     []string
}

// add appends the migrations todo of component.
func (b *batch) add(component string, todo []migration) {
	for _, m := range todo {
		b.components = append(b.components, component)
		b.versions = append(b.versions, m.version)
		b.bodies = append(b.bodies, m.body)
	}
}

// apply applies the batch with t, recording its versions in table.
func (b *batch) apply(ctx context.Context, db *sql.DB, t Together, table string) error {
	return t.ApplyTogether(ctx, db, table, b.components, b.versions, b.bodies, time.Now())
}

// applyApart applies each of components with Apply.
func applyApart(ctx context.Context, db *sql.DB, d Driver, prefix string, components []string) error {
	for _, component := range components {
		if err := Apply(ctx, db, d, prefix, component); err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, db *sql.DB, d Driver, table, component string, version int, body string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if done, err := d.VersionRecorded(ctx, tx, table, component, version); err != nil || done {
		return err
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if err := d.RecordVersion(ctx, tx, table, component, version, time.Now()); err != nil {
		return err
	}
	return tx.Commit()
}

// appliedVersions returns the versions of component already applied. A
// missing table means none.
func appliedVersions(ctx context.Context, db *sql.DB, d Driver, table, component string) (map[int]bool, error) {
	exists, err := d.TableExists(ctx, db, table)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return recorded(ctx, db, d, table, component, exists)
}

// recorded returns the versions of component that table records, or none
// when the table does not exist.
func recorded(ctx context.Context, db *sql.DB, d Driver, table, component string, exists bool) (map[int]bool, error) {
	out := map[int]bool{}
	if !exists {
		return out, nil
	}
	versions, err := d.Versions(ctx, db, table, component)
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		out[v] = true
	}
	return out, nil
}

// Applied reports whether migration version of component is applied in
// the database (prefix as for Apply). A database without the migrations
// table has none applied. Read-only callers use it to read a database an
// older version wrote without the columns later migrations add.
func Applied(ctx context.Context, db *sql.DB, d Driver, prefix, component string, version int) (bool, error) {
	applied, err := appliedVersions(ctx, db, d, prefix+"migrations", component)
	return applied[version], err
}
