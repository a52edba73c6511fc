package migrate_test

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/internal/migrate"
	"github.com/idemport/idemport/sink/sqlite"
)

// files is a migrate.Driver: SQLite's, but for its migrations, an
// in-memory file system.
type files struct {
	sqlite.Driver
	fsys fs.FS
}

func (f files) Migrations(string) (fs.FS, error) { return f.fsys, nil }

// TestSameNumberRefused: two migrations of one number (as when two
// branches each add the next) are an error, not a second file silently
// taken as applied with the first.
func TestSameNumberRefused(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fsys := fstest.MapFS{
		"0001_a.up.sql": {Data: []byte("CREATE TABLE {{prefix}}a (x INTEGER);")},
		"0002_b.up.sql": {Data: []byte("CREATE TABLE {{prefix}}b (x INTEGER);")},
		"0002_c.up.sql": {Data: []byte("CREATE TABLE {{prefix}}c (x INTEGER);")},
	}
	err = migrate.Apply(context.Background(), db, files{fsys: fsys}, "t_", "test")
	if err == nil || !strings.Contains(err.Error(), "0002_b.up.sql and 0002_c.up.sql have the same number") {
		t.Fatalf("err %v", err)
	}
}

// TestComponentsRecordedApart: components share the versions table, and
// each is applied and reported by its own versions alone; applying again
// runs nothing (the migrations would fail if run twice).
func TestComponentsRecordedApart(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := files{fsys: fstest.MapFS{
		"0001_a.up.sql": {Data: []byte("CREATE TABLE {{prefix}}a1 (x INTEGER);")},
		"0002_a.up.sql": {Data: []byte("CREATE TABLE {{prefix}}a2 (x INTEGER);")},
	}}
	b := files{fsys: fstest.MapFS{"0001_b.up.sql": {Data: []byte("CREATE TABLE {{prefix}}b1 (x INTEGER);")}}}
	for i := 0; i < 2; i++ {
		if err := migrate.Apply(ctx, db, a, "t_", "a"); err != nil {
			t.Fatalf("apply a, time %d: %v", i+1, err)
		}
		if err := migrate.Apply(ctx, db, b, "t_", "b"); err != nil {
			t.Fatalf("apply b, time %d: %v", i+1, err)
		}
	}
	for _, c := range []struct {
		component string
		version   int
		want      bool
	}{{"a", 1, true}, {"a", 2, true}, {"b", 1, true}, {"b", 2, false}, {"c", 1, false}} {
		if got, err := migrate.Applied(ctx, db, a, "t_", c.component, c.version); err != nil || got != c.want {
			t.Errorf("applied %s %d: %v (%v), want %v", c.component, c.version, got, err, c.want)
		}
	}
	if ok, err := a.TableExists(ctx, db, "t_b1"); err != nil || !ok {
		t.Errorf("b's migration made no table t_b1: %v", err)
	}
}
