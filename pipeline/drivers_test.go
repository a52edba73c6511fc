package pipeline

import (
	"errors"
	"fmt"
	"testing"

	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/mysql"
	"github.com/idemport/idemport/sink/postgres"
	"github.com/idemport/idemport/sink/sqlite"
)

// TestDriversChooseByDSN checks that the registry gives each DSN form the
// driver that owns it, bare paths SQLite, and a URL of an unknown scheme a
// usage error naming every form, its password masked.
func TestDriversChooseByDSN(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn  string
		want sink.Driver
	}{
		{"idemport.db", sqlite.Driver{}},
		{"data/x.db", sqlite.Driver{}},
		{"sqlite:///abs/x.db", sqlite.Driver{}},
		{"sqlite:rel.db", sqlite.Driver{}},
		{"file:x.db?mode=ro", sqlite.Driver{}},
		{"postgres://u:secret@h/db", postgres.Driver{}},
		{"postgresql://h/db", postgres.Driver{}},
		{"host=h dbname=db password=secret", postgres.Driver{}},
		{" dbname=db", postgres.Driver{}},
		{"mysql://u:secret@h:3306/db", mysql.Driver{}},
		{"mariadb://h/db", mysql.Driver{}},
		{"MariaDB://h/db", mysql.Driver{}},
	} {
		got, err := Drivers().Lookup(c.dsn)
		if err != nil || got != c.want {
			t.Errorf("%q: %T %v, want %T", c.dsn, got, err, c.want)
		}
	}
	_, err := Drivers().Lookup("oracle://u:secret@h/db")
	var ce *sink.ConfigError
	want := `unsupported target "oracle://u:xxxxx@h/db" (want a SQLite path, sqlite://PATH, postgres://… or host=… dbname=…, mysql://user:password@host:3306/database or mariadb://…)`
	if !errors.As(err, &ce) || err.Error() != want {
		t.Errorf("unknown scheme: %v, want %s", err, want)
	}
	for dsn, want := range map[string]string{
		"postgres://u:secret@h/db":         "postgres://u:xxxxx@h/db",
		"host=h dbname=db password=secret": "host=h dbname=db password=xxxxx",
		"idemport.db":                      "idemport.db",
	} {
		if got := Redact(dsn); got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// TestOpenUsageErrors checks that a DSN no driver can serve is a
// *UsageError, as it was when pipeline parsed DSNs itself.
func TestOpenUsageErrors(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"sqlite:":       `"sqlite:" names no file`,
		"oracle://h/db": `unsupported target "oracle://h/db" (want a SQLite path, sqlite://PATH, postgres://… or host=… dbname=…, mysql://user:password@host:3306/database or mariadb://…)`,
	} {
		_, err := Open(t.Context(), dsn, Options{})
		var ue *UsageError
		if !errors.As(err, &ue) || err.Error() != want {
			t.Errorf("%q: %v (%s), want a usage error %q", dsn, err, fmt.Sprintf("%T", err), want)
		}
	}
}
