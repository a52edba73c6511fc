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
)

// files is a migrate.Driver for SQLite whose migrations are an in-memory
// file system.
type files struct{ fsys fs.FS }

func (f files) Migrations(string) (fs.FS, error) { return f.fsys, nil }
func (f files) Rebind(q string) string           { return q }
func (f files) TableExists(ctx context.Context, q migrate.Querier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

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
	err = migrate.Apply(context.Background(), db, files{fsys}, "t_", "test")
	if err == nil || !strings.Contains(err.Error(), "0002_b.up.sql and 0002_c.up.sql have the same number") {
		t.Fatalf("err %v", err)
	}
}
