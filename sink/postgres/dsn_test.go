package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemport/idemport/sink"
)

// TestRedactKeyValue: a key=value string is shown pair by pair with its
// passwords masked, however it is spaced or quoted; what cannot be read
// is not shown.
func TestRedactKeyValue(t *testing.T) {
	for in, want := range map[string]string{
		"host=h dbname=db password=secret":                  "host=h dbname=db password=xxxxx",
		"host=h password = secret sslmode=require":          "host=h password=xxxxx sslmode=require",
		`host=h password='two secret words' dbname='my db'`: `host=h password=xxxxx dbname='my db'`,
		`host=h password='it\'s secret' user=u`:             "host=h password=xxxxx user=u",
		"host=h sslpassword=secret":                         "host=h sslpassword=xxxxx",
		"host=h password='unterminated secret":              "host=h …",
		"host=h password":                                   "host=h …",
	} {
		if got := (Driver{}).Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenUnparsableDSN: a DSN the driver cannot parse is a
// *sink.ConfigError (a usage error, exit 2) that shows neither its
// password nor its query values.
func TestOpenUnparsableDSN(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u@127.0.0.1:5432/db?sslmode=bogus&password=secret1&application_name=secret2",
		"postgres://u:secret1@127.0.0.1:5432/d%zzb",
		"host=127.0.0.1 password='secret1 secret2' sslmode=bogus",
		"host=127.0.0.1 sslmode=bogus password = secret1",
	} {
		_, err := (Driver{}).Open(context.Background(), dsn, sink.Settings{ReadOnly: true})
		var ce *sink.ConfigError
		if !errors.As(err, &ce) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): %T %v", dsn, err, err)
		}
	}
}
