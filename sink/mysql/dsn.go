package mysql

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/idemport/idemport/sink"
)

// schemes are the URL schemes the driver claims.
var schemes = []string{"mysql://", "mariadb://"}

// Claims implements sink.Driver: mysql://… and mariadb://….
func (Driver) Claims(dsn string) bool {
	for _, s := range schemes {
		if strings.HasPrefix(strings.ToLower(dsn), s) {
			return true
		}
	}
	return false
}

// Forms implements sink.Driver.
func (Driver) Forms() string { return "mysql://user:password@host:3306/database or mariadb://…" }

// Redact implements sink.Driver: the password and every query value
// masked.
func (Driver) Redact(dsn string) string { return sink.RedactURL(dsn) }

// defaultPort is the port of a URL that names none.
const defaultPort = "3306"

// parseDSN reads a mysql:// or mariadb:// URL,
//
//	mysql://user:password@host:port/database?param=value&…
//
// into the configuration of github.com/go-sql-driver/mysql: user and
// password percent-decoded, the host (127.0.0.1 when empty) and its port
// (3306), the database, which must be named, and the query's parameters as
// that driver reads them from its own DSNs (tls=true, timeout=5s, …; see
// its documentation). A socket=PATH parameter connects through a Unix
// socket instead of TCP.
func parseDSN(dsn string) (*mysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if s := strings.ToLower(u.Scheme); s != "mysql" && s != "mariadb" {
		return nil, fmt.Errorf("scheme %q is not mysql or mariadb", u.Scheme)
	}
	base := mysql.NewConfig()
	if u.User != nil {
		base.User = u.User.Username()
		base.Passwd, _ = u.User.Password()
	}
	base.DBName = strings.TrimPrefix(u.Path, "/")
	if base.DBName == "" || strings.Contains(base.DBName, "/") {
		return nil, errors.New("name the database: mysql://user@host:3306/DATABASE")
	}
	query := u.Query()
	if sock := query.Get("socket"); sock != "" {
		base.Net, base.Addr = "unix", sock
		query.Del("socket")
	} else {
		host, port := u.Hostname(), u.Port()
		if host == "" {
			host = "127.0.0.1"
		}
		if port == "" {
			port = defaultPort
		}
		base.Net, base.Addr = "tcp", net.JoinHostPort(host, port)
	}
	// go-sql-driver/mysql reads its parameters from its own DSN form:
	// the URL's are handed to it in that form, its parser checks them.
	native := base.FormatDSN()
	if len(query) > 0 {
		native += "?" + query.Encode()
	}
	cfg, err := mysql.ParseDSN(native)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}
