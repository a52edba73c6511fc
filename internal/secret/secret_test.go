package secret

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, url, dsn string }{
		{"https://user:pw@example.com/a.csv", "https://user:xxxxx@example.com/a.csv", ""},
		{"https://TOKEN@example.com/a.csv", "https://xxxxx@example.com/a.csv", ""},
		{"postgres://alice@db/x", "postgres://xxxxx@db/x", "postgres://alice@db/x"},
		{"postgres://alice:pw@db:5432/x?sslmode=disable&password=pw2", "", "postgres://alice:xxxxx@db:5432/x?sslmode=xxxxx&password=xxxxx"},
		{"https://h/a.csv?X-Amz-Signature=abc&X-Amz-Date=1&code=c", "https://h/a.csv?X-Amz-Signature=xxxxx&X-Amz-Date=xxxxx&code=xxxxx", ""},
		{"https://h/a.csv?token&x=&y=1#frag", "https://h/a.csv?xxxxx&x=&y=xxxxx#xxxxx", ""},
		{"s3://bucket/backup@2026/k.csv", "s3://bucket/backup@2026/k.csv", ""},
		{"nats://u:p@127.0.0.1:4222/subject", "nats://u:xxxxx@127.0.0.1:4222/subject", ""},
		// Unparsable: masked as well as the shape allows.
		{"http://u:pw@h/a%zz.csv?code=c", "http://u:xxxxx@h/a%zz.csv?code=xxxxx", ""},
		{"postgres://u:p/w@h/db", "postgres://u:xxxxx@h/db", ""},
		{"http://u:pw@h/x\nforged.csv", "http://u:xxxxx@h/x\nforged.csv", ""},
		{"/tmp/a.csv", "/tmp/a.csv", "/tmp/a.csv"},
		{"C:\\data\\a.csv", "C:\\data\\a.csv", ""},
	} {
		if tc.url != "" {
			if got := URL(tc.in); got != tc.url {
				t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.url)
			}
		}
		if tc.dsn != "" {
			if got := DSN(tc.in); got != tc.dsn {
				t.Errorf("DSN(%q) = %q, want %q", tc.in, got, tc.dsn)
			}
		}
	}
}

func TestPartsAndScrub(t *testing.T) {
	s := "postgres://alice:p%40ss@db/x?connect_timeout=10&application_name=appsecret&t=tok%2Fen"
	parts := Parts(s, true)
	for _, want := range []string{"p%40ss", "p@ss", "appsecret", "tok%2Fen", "tok/en"} {
		if !slices.Contains(parts, want) {
			t.Errorf("Parts(%q) = %q, lacks %q", s, parts, want)
		}
	}
	if slices.Contains(parts, "10") || slices.Contains(parts, "alice") {
		t.Errorf("Parts(%q) = %q: holds what is not secret", s, parts)
	}
	msg := `cannot parse: password "p@ss" and app appsecret`
	if got := Scrub(msg, parts); strings.Contains(got, "p@ss") || strings.Contains(got, "appsecret") {
		t.Errorf("Scrub: %q", got)
	}
}

func TestParseError(t *testing.T) {
	for _, in := range []string{"http://u:pw@h/a%zz.csv?code=secretcode", "http://u:pw@h/x\n.csv?code=secretcode", "http://u:pw@[::1/?code=secretcode"} {
		_, err := url.Parse(in)
		if err == nil {
			t.Fatalf("%q parsed", in)
		}
		if got := ParseError(err).Error(); strings.Contains(got, "pw") || strings.Contains(got, "secretcode") || !strings.HasPrefix(got, "not a valid URL") {
			t.Errorf("ParseError(%q) = %q", in, got)
		}
	}
}
