package mysql

import (
	"strings"
	"testing"
)

func TestParseDSN(t *testing.T) {
	for _, c := range []struct {
		name, dsn                 string
		user, pass, net, addr, db string
		tls                       string
		err                       string
	}{
		{name: "url", dsn: "mysql://app:secret@db.example:3307/sales", user: "app", pass: "secret", net: "tcp", addr: "db.example:3307", db: "sales"},
		{name: "mariadb scheme, default host and port", dsn: "mariadb://root@/test", user: "root", net: "tcp", addr: "127.0.0.1:3306", db: "test"},
		{name: "percent-encoded password", dsn: "mysql://app:p%40ss%2Fw%3Ard@h/db", user: "app", pass: "p@ss/w:rd", net: "tcp", addr: "h:3306", db: "db"},
		{name: "ipv6 host", dsn: "mysql://u@[::1]:3306/db", user: "u", net: "tcp", addr: "[::1]:3306", db: "db"},
		{name: "socket", dsn: "mysql://u@/db?socket=/run/mysqld/mysqld.sock", user: "u", net: "unix", addr: "/run/mysqld/mysqld.sock", db: "db"},
		{name: "driver parameter", dsn: "mysql://u@h/db?tls=skip-verify", user: "u", net: "tcp", addr: "h:3306", db: "db", tls: "skip-verify"},
		{name: "no database", dsn: "mysql://u@h:3306", err: "name the database"},
		{name: "bad parameter", dsn: "mysql://u@h/db?parseTime=maybe", err: "invalid bool"},
		{name: "other scheme", dsn: "postgres://u@h/db", err: "scheme"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseDSN(c.dsn)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("parseDSN(%q) = %v, want an error with %q", c.dsn, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName, cfg.TLSConfig}
			want := []string{c.user, c.pass, c.net, c.addr, c.db, c.tls}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("parseDSN(%q) = %q, want %q", c.dsn, got, want)
			}
		})
	}
}

func TestClaimsAndRedact(t *testing.T) {
	d := Driver{}
	for dsn, want := range map[string]bool{
		"mysql://u@h/db": true, "MariaDB://u@h/db": true, "postgres://u@h/db": false, "orders.db": false, "sqlite://x.db": false,
	} {
		if got := d.Claims(dsn); got != want {
			t.Errorf("Claims(%q) = %v, want %v", dsn, got, want)
		}
	}
	if got := d.Redact("mysql://app:secret@h:3306/db?tls=true"); strings.Contains(got, "secret") || !strings.Contains(got, "app") {
		t.Errorf("Redact left the password or lost the user: %s", got)
	}
}
