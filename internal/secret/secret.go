// Package secret masks the credentials of the addresses users give idemport
// (remote inputs, event sinks, database URLs) in everything it prints,
// logs or stores. It is the one home of the rule: in a URL, the password
// of its user information, a user given alone (a token, as in
// https://TOKEN@host/), every query value and the fragment are masked;
// the scheme, host, port and path are shown. A token that is part of a
// URL's path cannot be told from a name: such a URL is given with the
// token in an environment variable instead (see internal/notify).
package secret

import (
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Mask is what a masked part shows.
const Mask = "xxxxx"

// URL returns s, a URL, with its credentials masked. A string without
// "://" is returned as it is. A URL that does not parse is masked as well
// as its shape allows, never shown whole.
func URL(s string) string { return mask(s, false) }

// DSN is URL for a database URL, whose user given alone is a role name,
// not a token, and is shown.
func DSN(s string) string { return mask(s, true) }

func mask(s string, keepUser bool) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	rest, _, hasFrag := strings.Cut(rest, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	// The user information ends at the authority's last '@'. A URL that
	// parses has its authority end at the first '/'; one that does not may
	// hold a password with a '/' in it, so the last '@' before the query
	// ends it.
	authEnd := len(rest)
	if _, err := url.Parse(s); err == nil {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			authEnd = i
		}
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	if at := strings.LastIndexByte(rest[:authEnd], '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(rest[:at], ":")
		switch {
		case hasPassword:
			b.WriteString(user + ":" + Mask)
		case keepUser:
			b.WriteString(user)
		default:
			b.WriteString(Mask)
		}
		rest = rest[at:]
	}
	b.WriteString(rest)
	if hasQuery {
		b.WriteString("?" + maskQuery(query))
	}
	if hasFrag {
		b.WriteString("#" + Mask)
	}
	return b.String()
}

// maskQuery masks every value of a raw query, keeping its keys and order;
// a part without '=' (which may be a token by itself) is masked whole.
func maskQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok && p != "":
			parts[i] = Mask
		case ok && v != "":
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// Parts returns the secret parts of the URL s, each as written and
// %-decoded, longest first, for Scrub: its password, a user given alone
// (unless keepUser), and its query values and fragment of six characters
// or more (shorter ones, such as sslmode=disable's, are not secret and
// would scrub common words).
func Parts(s string, keepUser bool) []string {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil
	}
	var out []string
	add := func(p string, min int) {
		for _, v := range []string{p, unescape(p)} {
			if len(v) >= min && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	rest, frag, _ := strings.Cut(rest, "#")
	add(frag, 6)
	rest, query, _ := strings.Cut(rest, "?")
	for _, p := range strings.Split(query, "&") {
		if _, v, ok := strings.Cut(p, "="); ok {
			add(v, 6)
		} else {
			add(p, 6)
		}
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		user, password, hasPassword := strings.Cut(rest[:at], ":")
		switch {
		case hasPassword:
			add(password, 1)
		case !keepUser:
			add(user, 1)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Scrub returns text with every occurrence of each of parts replaced by
// Mask: for messages of libraries that may quote what they were given.
func Scrub(text string, parts []string) string {
	for _, p := range parts {
		if p != "" {
			text = strings.ReplaceAll(text, p, Mask)
		}
	}
	return text
}

// ParseError returns a parse failure of net/url without the URL its text
// quotes: what was wrong, in words.
func ParseError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ee url.EscapeError
	var he url.InvalidHostError
	switch {
	case errors.As(err, &ee):
		return errors.New("not a valid URL: a '%' not followed by two hexadecimal digits")
	case errors.As(err, &he):
		return errors.New("not a valid URL: an invalid character in its host")
	case err != nil && strings.Contains(err.Error(), "control character"):
		return errors.New("not a valid URL: a control character in it")
	}
	return errors.New("not a valid URL")
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// ScrubError returns err with Scrub applied to its text; it unwraps to
// err, so that errors.Is and errors.As still see what it wraps. A nil err
// stays nil.
func ScrubError(err error, parts []string) error {
	if err == nil || len(parts) == 0 {
		return err
	}
	return &scrubbed{msg: Scrub(err.Error(), parts), err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
