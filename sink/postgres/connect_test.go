package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestFull tells a full disk (SQLSTATE 53100), wrapped or not, from other
// errors.
func TestFull(t *testing.T) {
	full := &pgconn.PgError{Code: "53100", Message: "could not extend file: No space left on device"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{full, true},
		{fmt.Errorf("commit partition 3: %w", full), true},
		{&pgconn.PgError{Code: "53200"}, false}, // out of memory
		{errors.New("no space"), false},
		{nil, false},
	} {
		if got := (Driver{}).Full(tc.err); got != tc.want {
			t.Errorf("Full(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
