package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"github.com/idemport/idemport/bench/orders"
)

// db is the database of the MariaDB rows, idemport_bench_TAG (TAG: the
// run's, env.own), made anew before each run: idemport's table orders (and
// its own tables beside it) and the anchor's table bench_load.
func (m mariaTarget) db() string { return m.e.own("idemport_bench") }

// mariaTarget is the MariaDB server the benchmark writes, reached as the
// mysql:// URL dsn gives (host, port, user, password; its database is
// not used).
type mariaTarget struct {
	e                          *env
	dsn                        string // the URL of db()
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
	u.Path = "/" + m.db()
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

// recreate is the SQL making db() anew, empty.
func (m mariaTarget) recreate() string {
	return "DROP DATABASE IF EXISTS " + m.db() + "; CREATE DATABASE " + m.db() +
		" CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"
}

// reset makes db() anew, for idemport.
func (m mariaTarget) reset() error { return m.sql(m.recreate()) }

// loadTable is the SQL making the anchor's table: orders keyed by order_id,
// or with -file the file's columns (mariaTable); its columns declared as
// idemport's MariaDB driver declares them.
func (m mariaTarget) loadTable() string {
	if m.e.cols != nil {
		return m.recreate() + "; " + m.e.mariaTable(m.db()+".bench_load")
	}
	return m.recreate() + "; CREATE TABLE " + m.db() + ".bench_load(order_id BIGINT NOT NULL PRIMARY KEY, customer_id BIGINT, " +
		"sku LONGTEXT, quantity BIGINT, unit_price DOUBLE, status LONGTEXT, created_at DATETIME(6), note LONGTEXT)"
}

// mariaTable is the CREATE TABLE of the anchor's table for the -file data
// set on MariaDB: the plan's types as idemport's MariaDB driver declares
// them (decimals as text), keyed by e.keyCol when it is set (a text key
// column as the VARCHAR(768) idemport makes of it).
func (e *env) mariaTable(table string) string {
	var defs []string
	for _, c := range e.cols {
		t := mariaType(c.Type)
		if c.Name == e.keyCol {
			switch t {
			case "LONGTEXT", "MEDIUMTEXT":
				t = "VARCHAR(768)"
			}
			t += " NOT NULL"
		}
		defs = append(defs, mariaName(c.Name)+" "+t)
	}
	if e.keyCol != "" {
		defs = append(defs, "PRIMARY KEY ("+mariaName(e.keyCol)+")")
	}
	return "CREATE TABLE " + table + "(" + strings.Join(defs, ", ") + ")"
}

// mariaType is the MariaDB type of a column of the plan's type, as
// idemport's MariaDB driver declares it.
func mariaType(t string) string {
	switch t {
	case "bool":
		return "BOOLEAN"
	case "int64":
		return "BIGINT"
	case "float64":
		return "DOUBLE"
	case "timestamp", "localtimestamp":
		return "DATETIME(6)"
	case "date":
		return "DATE"
	case "decimal":
		return "MEDIUMTEXT"
	}
	return "LONGTEXT"
}

// mariaName quotes a column name for MariaDB.
func mariaName(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// mariaColumns are the column list and the SET clause of the anchor's
// LOAD DATA for the -file data set, as a user would write them for a CSV
// file: text and JSON as they are, every other field read into a variable and an empty
// one made NULL (as an unquoted empty field of psql's CSV is), true and
// false as 1 and 0, and a timestamp's T and Z dropped so that the server
// reads it (the plan's other offsets are beyond the client's LOAD DATA).
func (e *env) mariaColumns() (cols, set []string) {
	for i, c := range e.cols {
		if mariaType(c.Type) == "LONGTEXT" {
			cols = append(cols, mariaName(c.Name))
			continue
		}
		v := fmt.Sprintf("@v%d", i+1)
		cols = append(cols, v)
		x := "NULLIF(" + v + ", '')"
		switch c.Type {
		case "bool":
			x = "CASE LOWER(" + v + ") WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE " + x + " END"
		case "timestamp", "localtimestamp":
			x = "REPLACE(REPLACE(" + x + ", 'T', ' '), 'Z', '')"
		}
		set = append(set, mariaName(c.Name)+" = "+x)
	}
	return cols, set
}

// resetLoad makes db() anew with the anchor's empty table.
func (m mariaTarget) resetLoad() error { return m.sql(m.loadTable()) }

// loadArgs is the mariadb client's LOAD DATA LOCAL INFILE of the CSV file
// csv into bench_load (loadSQL).
func (m mariaTarget) loadArgs(csv string) []string {
	return m.client(m.db(), m.loadSQL(csv, "bench_load"))
}

// loadSQL is the LOAD DATA LOCAL INFILE of the CSV file csv into table:
// quoted fields with doubled quotes, the header skipped; for the orders
// data set created_at (RFC 3339, UTC) parsed to a DATETIME, for -file the
// columns as mariaColumns reads them.
func (m mariaTarget) loadSQL(csv, table string) string {
	cols := []string{"order_id", "customer_id", "sku", "quantity", "unit_price", "status", "@created_at", "note"}
	set := []string{"created_at = STR_TO_DATE(@created_at, '%Y-%m-%dT%H:%i:%sZ')"}
	if m.e.cols != nil {
		cols, set = m.e.mariaColumns()
	}
	sql := "LOAD DATA LOCAL INFILE '" + strings.ReplaceAll(csv, "'", "''") + "' INTO TABLE " + table + " CHARACTER SET utf8mb4" +
		` FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' ESCAPED BY '' LINES TERMINATED BY '\n' IGNORE 1 LINES` +
		" (" + strings.Join(cols, ", ") + ")"
	if len(set) > 0 {
		sql += " SET " + strings.Join(set, ", ")
	}
	return sql
}

// mergeSQL is the hand-written merge of the delta file csv into
// bench_load: LOAD DATA into a temporary table d like it, then one
// INSERT … SELECT … ON DUPLICATE KEY UPDATE of every column but the key
// (a row set to the values it has is not written).
func (m mariaTarget) mergeSQL(csv string) string {
	cols := orders.Columns
	if m.e.cols != nil {
		cols = nil
		for _, c := range m.e.cols {
			cols = append(cols, c.Name)
		}
	}
	var set []string
	for _, c := range cols {
		if c != m.e.keyCol {
			set = append(set, mariaName(c)+" = VALUES("+mariaName(c)+")")
		}
	}
	merge := "INSERT INTO bench_load SELECT * FROM d"
	if len(set) == 0 {
		merge = "INSERT IGNORE INTO bench_load SELECT * FROM d"
	} else {
		merge += " ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
	}
	return "CREATE TEMPORARY TABLE d LIKE bench_load; " + m.loadSQL(csv, "d") + "; " + merge
}

// base is the database of the delta section's day 1, which each run
// starts from a copy of: idemport_bench_base_TAG.
func (m mariaTarget) base() string { return m.e.own("idemport_bench_base") }

// copyTables returns a setup that makes database to anew with a copy of
// the tables of database from that which says (an SQL condition on
// table_name: the anchor's or idemport's): each made by CREATE TABLE …
// LIKE and filled by INSERT … SELECT of its stored columns (a generated
// column is computed again). MariaDB has no template databases.
func (m mariaTarget) copyTables(from, to, which string) func() error {
	return func() error {
		argv := []string{"mariadb", "-h", m.host, "-P", m.port, "-u", m.user, "-N", "-B", "-e",
			"SET SESSION group_concat_max_len = 1048576; SELECT table_name, GROUP_CONCAT(CONCAT('`', REPLACE(column_name, '`', '``'), '`')" +
				" ORDER BY ordinal_position SEPARATOR ', ') FROM information_schema.columns WHERE table_schema = '" + from +
				"' AND extra NOT LIKE '%GENERATED%' AND " + which + " GROUP BY table_name"}
		x := exec.Command(argv[0], argv[1:]...)
		x.Env = append(os.Environ(), m.env()...)
		out, err := x.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return fmt.Errorf("list the tables of %s: %v %s", from, err, stderr)
		}
		stmts := []string{"DROP DATABASE IF EXISTS " + to, "CREATE DATABASE " + to + " CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			table, cols, ok := strings.Cut(l, "\t")
			if !ok {
				continue
			}
			src, dst := from+"."+mariaName(table), to+"."+mariaName(table)
			stmts = append(stmts, "CREATE TABLE "+dst+" LIKE "+src, "INSERT INTO "+dst+" ("+cols+") SELECT "+cols+" FROM "+src)
		}
		return m.sql(strings.Join(stmts, "; "))
	}
}

// mariadbDelta times the daily delta into a copy of the N-row tables:
// each tool's day 1 (the mariadb client's LOAD DATA into bench_load,
// idemport's import by --key into orders) is made once and copied into
// base(), and each run starts from a copy of its tool's tables in
// db(). The anchor is the hand-written merge (mergeSQL).
func (e *env) mariadbDelta(dsn string) {
	delta, rows := e.deltaFile()
	m := e.maria(dsn)
	check(m.resetLoad())
	for _, c := range []cmd{{name: "mariadb day 1", argv: m.loadArgs(e.csv), env: m.env()}, {name: "day 1", argv: m.importArgs(append(e.key(), e.csv)...)}} {
		_, err := run(c)
		check(err)
	}
	check(m.copyTables(m.db(), m.base(), "true")())
	anchorTables, idemportTables := "table_name = 'bench_load'", "table_name <> 'bench_load'"
	merge := m.client(m.db(), m.mergeSQL(delta))
	srv := newServerCPU(m.host, "mariadbd", "mysqld")
	ms, r := e.race(e.runs,
		cmd{name: "mariadb merge", setup: srv.around(0, m.copyTables(m.base(), m.db(), anchorTables)), argv: merge, env: m.env()},
		cmd{name: "idemport delta", setup: srv.around(1, m.copyTables(m.base(), m.db(), idemportTables)), argv: m.importArgs(append(e.key(), delta)...)})
	srv.stop()
	e.add(anchor("mariadb merge", summary(srv.named(0, "mariadb LOAD DATA into temp + INSERT … ON DUPLICATE KEY UPDATE"), ms[0], rows)))
	e.show(merge, "the day-1 table loaded by LOAD DATA as in first, copied into "+m.db()+" by CREATE TABLE … LIKE and INSERT … SELECT")
	e.add(withRatio(summary(srv.named(1, "idemport --key delta (½ new, ½ changed) → N-row MariaDB"), ms[1], rows), "mariadb merge", r[1]))
	m.sql("DROP DATABASE IF EXISTS " + m.db() + "; DROP DATABASE IF EXISTS " + m.base())
}

func (m mariaTarget) importArgs(extra ...string) []string {
	return append([]string{m.e.idemport, "import", "--progress", "never", "--into", m.dsn, "--table", "orders"}, extra...)
}

// mariadbFirst times the first import into an empty MariaDB table,
// ordinal and --key, against the mariadb client's LOAD DATA LOCAL INFILE
// of the same file into the same keyed table (with -file and no -key, a
// table without a key, and only the ordinal import).
func (e *env) mariadbFirst(dsn string) {
	m := e.maria(dsn)
	cs := []cmd{
		{name: "mariadb load data", setup: m.resetLoad, argv: m.loadArgs(e.csv), env: m.env()},
		{name: "idemport", setup: m.reset, argv: m.importArgs(e.csv)},
	}
	if e.keyCol != "" {
		cs = append(cs, cmd{name: "idemport --key", setup: m.reset, argv: m.importArgs(append(e.key(), e.csv)...)},
			cmd{name: "idemport --key, state made", setup: e.stateMade(m.reset,
				[]string{e.idemport, "import", "--progress", "never", "--into", m.dsn, "--table", "state_made"}),
				argv: m.importArgs(append(e.key(), e.csv)...)})
	}
	// The server does most of the work of every command: its CPU time is
	// read around each one when it runs on this machine.
	srv := newServerCPU(m.host, "mariadbd", "mysqld")
	for j := range cs {
		cs[j].setup = srv.around(j, cs[j].setup)
	}
	ms, r := e.race(e.runs, cs...)
	srv.stop()
	e.add(anchor("mariadb LOAD DATA", summary(srv.named(0, "mariadb LOAD DATA LOCAL INFILE → "+e.keyedTable("PRIMARY KEY")), ms[0], e.rows)))
	var setup []string
	for _, w := range m.client("", m.loadTable()) {
		setup = append(setup, quote(w))
	}
	e.show(cs[0].argv, strings.Join(setup, " "))
	e.add(withRatio(summary(srv.named(1, "idemport import CSV → MariaDB, ordinal"), ms[1], e.rows), "mariadb LOAD DATA", r[1]))
	if e.keyCol != "" {
		e.add(withRatio(summary(srv.named(2, "idemport import CSV → MariaDB, --key "+e.keyCol), ms[2], e.rows), "mariadb LOAD DATA", r[2]))
		e.add(withRatio(summary(srv.named(3, "idemport import CSV → MariaDB, --key "+e.keyCol+", state made before"), ms[3], e.rows), "mariadb LOAD DATA", r[3]))
	}
	m.sql("DROP DATABASE IF EXISTS " + m.db())
}
