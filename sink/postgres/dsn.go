package postgres

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemport/idemport/internal/secret"
	"github.com/idemport/idemport/sink"
)

// secretKeys are the key=value parameters whose values are secrets.
var secretKeys = []string{"password", "sslpassword"}

// kvPairs splits a libpq key=value connection string into its pairs as
// libpq reads it: KEY = VALUE, with optional spaces around '=', the value
// single-quoted (with \' and \\ inside) or running to the next space. It
// stops where it cannot read on, and returns the text from there as rest.
func kvPairs(s string) (pairs [][2]string, rest string) {
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return pairs, ""
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return pairs, s[start:]
		}
		i++
		skip()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					v.WriteByte(s[i])
					i++
					continue
				}
				if c == '\'' {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return pairs, s[start:]
			}
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
				v.WriteByte(s[i])
				i++
			}
		}
		pairs = append(pairs, [2]string{key, v.String()})
	}
}

// redactKV returns a key=value string as users may see it: each pair
// KEY=VALUE, a secret's value masked, a value with spaces or quotes
// quoted; what cannot be read is not shown.
func redactKV(s string) string {
	pairs, rest := kvPairs(s)
	out := make([]string, 0, len(pairs)+1)
	for _, p := range pairs {
		v := p[1]
		switch {
		case slices.Contains(secretKeys, p[0]):
			v = secret.Mask
		case v == "" || strings.ContainsAny(v, " \t\n\r'\\"):
			v = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
		}
		out = append(out, p[0]+"="+v)
	}
	if rest != "" {
		out = append(out, "…")
	}
	return strings.Join(out, " ")
}

// secretParts returns the secrets of dsn (passwords, and a URL's query
// values), for scrubbing from the errors of the PostgreSQL driver, which
// may quote them.
func secretParts(dsn string) []string {
	if !keyValue(dsn) {
		return secret.Parts(dsn, true)
	}
	pairs, rest := kvPairs(dsn)
	var parts []string
	for _, p := range pairs {
		if slices.Contains(secretKeys, p[0]) && p[1] != "" {
			parts = append(parts, p[1])
		}
	}
	if rest != "" {
		parts = append(parts, rest) // unreadable: it may hold a secret
	}
	slices.SortFunc(parts, func(a, b string) int { return len(b) - len(a) })
	return parts
}

// parseError is the *sink.ConfigError of a DSN pgx cannot parse: the DSN
// masked, and what is wrong with it, without the DSN pgx quotes.
func (d Driver) parseError(dsn string, err error) error {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		// "cannot parse `DSN`: what (why)": the DSN is dropped.
		if _, what, ok := strings.Cut(msg, "`: "); ok && !strings.Contains(pe.ConnString, "`") {
			msg = what
		} else {
			msg = "cannot parse it"
		}
	}
	return &sink.ConfigError{Err: fmt.Errorf("%s: %s", d.Redact(dsn), secret.Scrub(msg, secretParts(dsn)))}
}
