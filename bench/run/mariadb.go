package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
)

// mariaDatabase is the database of the MariaDB rows, made anew before each
// run: idemport's table orders (and its own tables beside it) and the
// anchor's table bench_load.
const mariaDatabase = "idemport_bench"

// mariaTarget is the MariaDB server the benchmark writes, reached as the
// mysql:// URL dsn gives (host, port, user, password; its database is
// not used).
type mariaTarget struct {
	e                          *env
	dsn                        string // the URL of mariaDatabase
	host, port, user, password string
}

func (e *env) maria(dsn string) mariaTarget {
	u, err := url.Parse(dsn)
	check(err)
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, "3306"
	}
	m := mariaTarget{e: e, host: host, port: port, user: u.User.Username()}
	m.password, _ = u.User.Password()
	u.Path = "/" + mariaDatabase
	m.dsn = u.String()
	return m
}

// client is the mariadb client's command line running sql in database db
// ("" for none), LOAD DATA LOCAL allowed. The password goes in the
// environment (env), not on the command line the report prints.
func (m mariaTarget) client(db, sql string) []string {
	argv := []string{"mariadb", "--local-infile=1", "-h", m.host, "-P", m.port, "-u", m.user}
	if db != "" {
		argv = append(argv, db)
	}
	return append(argv, "-e", sql)
}

// env is the client's environment besides the process's: the password.
func (m mariaTarget) env() []string {
	if m.password == "" {
		return nil
	}
	return []string{"MYSQL_PWD=" + m.password}
}

func (m mariaTarget) sql(s string) error {
	argv := m.client("", s)
	x := exec.Command(argv[0], argv[1:]...)
	x.Env = append(os.Environ(), m.env()...)
	if out, err := x.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb %q: %v %s", s, err, out)
	}
	return nil
}

// recreate is the SQL making mariaDatabase anew, empty.
func (m mariaTarget) recreate() string {
	return "DROP DATABASE IF EXISTS " + mariaDatabase + "; CREATE DATABASE " + mariaDatabase +
		" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"
}

// reset makes mariaDatabase anew, for idemport.
func (m mariaTarget) reset() error { return m.sql(m.recreate()) }

// loadTable is the SQL making the anchor's table: orders keyed by order_id,
// its columns declared as idemport's MariaDB driver declares them.
func (m mariaTarget) loadTable() string {
	return m.recreate() + "; CREATE TABLE " + mariaDatabase + ".bench_load(order_id BIGINT NOT NULL PRIMARY KEY, customer_id BIGINT, " +
		"sku LONGTEXT, quantity BIGINT, unit_price DOUBLE, status LONGTEXT, created_at DATETIME(6), note LONGTEXT)"
}

// resetLoad makes mariaDatabase anew with the anchor's empty table.
func (m mariaTarget) resetLoad() error { return m.sql(m.loadTable()) }

// loadArgs is the mariadb client's LOAD DATA LOCAL INFILE of the orders
// CSV file csv into bench_load: quoted fields with doubled quotes, the
// header skipped, created_at (RFC 3339, UTC) parsed to a DATETIME.
func (m mariaTarget) loadArgs(csv string) []string {
	return m.client(mariaDatabase, "LOAD DATA LOCAL INFILE '"+strings.ReplaceAll(csv, "'", "''")+"' INTO TABLE bench_load CHARACTER SET utf8mb4"+
		` FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' ESCAPED BY '' LINES TERMINATED BY '\n' IGNORE 1 LINES`+
		" (order_id, customer_id, sku, quantity, unit_price, status, @created_at, note)"+
		" SET created_at = STR_TO_DATE(@created_at, '%Y-%m-%dT%H:%i:%sZ')")
}

func (m mariaTarget) importArgs(extra ...string) []string {
	return append([]string{m.e.idemport, "import", "--progress", "never", "--into", m.dsn, "--table", "orders"}, extra...)
}

// mariadbFirst times the first import into an empty MariaDB table,
// ordinal and --key, against the mariadb client's LOAD DATA LOCAL INFILE
// of the same file into the same keyed table. It needs the orders data
// set: the anchor's statement spells its columns.
func (e *env) mariadbFirst(dsn string) {
	if e.cols != nil {
		fmt.Println("(MariaDB rows skipped: they run on the generated orders data set, not -file)")
		return
	}
	m := e.maria(dsn)
	cs := []cmd{
		{name: "mariadb load data", setup: m.resetLoad, argv: m.loadArgs(e.csv), env: m.env()},
		{name: "idemport", setup: m.reset, argv: m.importArgs(e.csv)},
		{name: "idemport --key", setup: m.reset, argv: m.importArgs(append(e.key(), e.csv)...)},
	}
	ms, r := race(e.runs, cs...)
	e.add(summary("mariadb LOAD DATA LOCAL INFILE → "+e.keyedTable("PRIMARY KEY"), ms[0], e.rows))
	var setup []string
	for _, w := range m.client("", m.loadTable()) {
		setup = append(setup, quote(w))
	}
	e.show(cs[0].argv, strings.Join(setup, " "))
	e.add(withRatio(summary("idemport import CSV → MariaDB, ordinal", ms[1], e.rows), "mariadb LOAD DATA", r[1]))
	e.add(withRatio(summary("idemport import CSV → MariaDB, --key "+e.keyCol, ms[2], e.rows), "mariadb LOAD DATA", r[2]))
	m.sql("DROP DATABASE IF EXISTS " + mariaDatabase)
}
