// Command anchor runs the plain alternatives idemport is measured against,
// each on the orders data set that bench/gen writes, so that bench/run can
// time them beside idemport on the same files:
//
//	anchor sha256 FILE                  SHA-256 of the file, read as idemport reads it
//	anchor csv FILE                     encoding/csv, every field converted to its type
//	anchor arrowcsv FILE                Apache Arrow's csv.Reader into typed record batches
//	anchor json FILE                    encoding/json, one line at a time into a struct
//	anchor sqlite-upsert N DB FILE      Go + go-sqlite3: INSERT … ON CONFLICT DO UPDATE, N rows per statement
//	anchor pgx-copy DSN FILE [TABLE]    pgx CopyFrom into a table keyed by order_id (TABLE, default bench_anchor, made anew)
//	anchor pgx-merge DSN FILE [TABLE]   pgx CopyFrom into a staging table, then INSERT … ON CONFLICT merges
//
// The loaders create their table (dropping it first) and commit every
// 100,000 rows, as idemport's default partition does. Each command prints
// the number of rows it handled.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3"

	"github.com/idemport/idemport/bench/orders"
)

// batchRows is how many rows a loader commits at once.
const batchRows = 100_000

// order is one row of the orders data set.
type order struct {
	OrderID    int64     `json:"order_id"`
	CustomerID int64     `json:"customer_id"`
	SKU        string    `json:"sku"`
	Quantity   int64     `json:"quantity"`
	UnitPrice  float64   `json:"unit_price"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	Note       *string   `json:"note"`
}

func (o *order) values() []any {
	var note any
	if o.Note != nil {
		note = *o.Note
	}
	return []any{o.OrderID, o.CustomerID, o.SKU, o.Quantity, o.UnitPrice, o.Status, o.CreatedAt, note}
}

var columns = strings.Join(orders.Columns, ", ")

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: anchor sha256|csv|arrowcsv|json FILE | sqlite-upsert N DB FILE | pgx-copy|pgx-merge DSN FILE [TABLE]")
		os.Exit(2)
	}
	args := os.Args[2:]
	var n int64
	var err error
	switch os.Args[1] {
	case "sha256":
		n, err = hashFile(args[0])
	case "csv":
		n, err = readCSV(args[0], func(*order) error { return nil })
	case "arrowcsv":
		n, err = readArrowCSV(args[0])
	case "json":
		n, err = readJSON(args[0])
	case "sqlite-upsert":
		if len(args) != 3 {
			err = errors.New("sqlite-upsert N DB FILE")
			break
		}
		var per int
		if per, err = strconv.Atoi(args[0]); err == nil {
			n, err = sqliteUpsert(per, args[1], args[2])
		}
	case "pgx-copy", "pgx-merge":
		if len(args) != 2 && len(args) != 3 {
			err = errors.New(os.Args[1] + " DSN FILE [TABLE]")
			break
		}
		table := "bench_anchor"
		if len(args) == 3 {
			table = args[2]
		}
		n, err = pgxLoad(args[0], args[1], table, os.Args[1] == "pgx-merge")
	default:
		err = fmt.Errorf("unknown anchor %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "anchor:", err)
		os.Exit(1)
	}
	fmt.Println(n, "rows")
}

func hashFile(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return 0, err
	}
	fmt.Printf("%x  %s (%d bytes)\n", h.Sum(nil), path, n)
	return 0, nil
}

// readCSV parses the orders CSV with encoding/csv and converts every field
// to its type, calling fn with each row.
func readCSV(path string, fn func(*order) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil { // header
		return 0, err
	}
	var n int64
	var o order
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(rec) != 8 {
			return n, fmt.Errorf("row %d: %d fields", n+1, len(rec))
		}
		var errs [5]error
		o.OrderID, errs[0] = strconv.ParseInt(rec[0], 10, 64)
		o.CustomerID, errs[1] = strconv.ParseInt(rec[1], 10, 64)
		o.SKU = strings.Clone(rec[2])
		o.Quantity, errs[2] = strconv.ParseInt(rec[3], 10, 64)
		o.UnitPrice, errs[3] = strconv.ParseFloat(rec[4], 64)
		o.Status = strings.Clone(rec[5])
		o.CreatedAt, errs[4] = time.Parse(time.RFC3339, rec[6])
		o.Note = nil
		if rec[7] != "" {
			note := strings.Clone(rec[7])
			o.Note = &note
		}
		if err := errors.Join(errs[:]...); err != nil {
			return n, fmt.Errorf("row %d: %w", n+1, err)
		}
		n++
		if err := fn(&o); err != nil {
			return n, err
		}
	}
}

// readArrowCSV parses the orders CSV into typed Arrow record batches.
func readArrowCSV(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	schema := orders.Schema(arrow.Microsecond)
	r := arrowcsv.NewReader(bufio.NewReaderSize(f, 1<<20), schema, arrowcsv.WithHeader(true), arrowcsv.WithChunk(16384),
		arrowcsv.WithNullReader(true, ""))
	defer r.Release()
	var n int64
	for r.Next() {
		n += r.RecordBatch().NumRows()
	}
	return n, r.Err()
}

// readJSON decodes the orders JSONL one line at a time.
func readJSON(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var n int64
	for sc.Scan() {
		var o order
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return n, fmt.Errorf("line %d: %w", n+1, err)
		}
		n++
	}
	return n, sc.Err()
}

// sqliteUpsert loads the CSV into a new table of db (WAL, synchronous
// NORMAL, as idemport opens SQLite) with prepared upserts of per rows each.
func sqliteUpsert(per int, db, path string) (int64, error) {
	d, err := sql.Open("sqlite3", "file:"+db+"?_journal_mode=WAL&_synchronous=NORMAL")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	d.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := d.ExecContext(ctx, `DROP TABLE IF EXISTS orders; CREATE TABLE orders(order_id INTEGER PRIMARY KEY, customer_id INTEGER,
		sku TEXT, quantity INTEGER, unit_price REAL, status TEXT, created_at TEXT, note TEXT)`); err != nil {
		return 0, err
	}
	stmt := func(rows int) string {
		one := "(" + strings.TrimSuffix(strings.Repeat("?,", 8), ",") + ")"
		return "INSERT INTO orders (" + columns + ") VALUES " + strings.TrimSuffix(strings.Repeat(one+",", rows), ",") +
			" ON CONFLICT (order_id) DO UPDATE SET customer_id = excluded.customer_id, sku = excluded.sku, quantity = excluded.quantity," +
			" unit_price = excluded.unit_price, status = excluded.status, created_at = excluded.created_at, note = excluded.note"
	}
	var tx *sql.Tx
	var full *sql.Stmt
	var args []any
	inTx := 0
	// commit writes the rows left over with one statement of their own.
	commit := func() error {
		if len(args) > 0 {
			if _, err := tx.ExecContext(ctx, stmt(len(args)/8), args...); err != nil {
				return err
			}
			args = args[:0]
		}
		err := tx.Commit()
		tx, inTx = nil, 0
		return err
	}
	n, err := readCSV(path, func(o *order) error {
		if tx == nil {
			var err error
			if tx, err = d.BeginTx(ctx, nil); err != nil {
				return err
			}
			if full, err = tx.PrepareContext(ctx, stmt(per)); err != nil {
				return err
			}
		}
		v := o.values()
		v[6] = o.CreatedAt.UTC().Format(time.RFC3339)
		args = append(args, v...)
		if len(args) == 8*per {
			if _, err := full.ExecContext(ctx, args...); err != nil {
				return err
			}
			args = args[:0]
		}
		if inTx++; inTx == batchRows {
			return commit()
		}
		return nil
	})
	if err == nil && tx != nil {
		err = commit()
	}
	if tx != nil {
		tx.Rollback()
	}
	return n, err
}

// pgxLoad loads the CSV into table (made anew), keyed by order_id, with pgx CopyFrom,
// straight in, or (merge) through a staging table merged with
// INSERT … ON CONFLICT DO UPDATE … WHERE … IS DISTINCT FROM.
func pgxLoad(dsn, path, table string, merge bool) (int64, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+table+`; CREATE TABLE `+table+`(order_id bigint PRIMARY KEY, customer_id bigint,
		sku text, quantity bigint, unit_price double precision, status text, created_at timestamptz, note text)`); err != nil {
		return 0, err
	}
	cols := strings.Split(columns, ", ")
	target := table
	if merge {
		target = "bench_anchor_stage" // a temporary table: the session's own
		if _, err := conn.Exec(ctx, `CREATE TEMP TABLE bench_anchor_stage (LIKE `+table+`)`); err != nil {
			return 0, err
		}
	}
	var set []string
	for _, c := range cols[1:] {
		set = append(set, c+" = excluded."+c)
	}
	mergeSQL := "INSERT INTO " + table + " SELECT * FROM bench_anchor_stage ON CONFLICT (order_id) DO UPDATE SET " + strings.Join(set, ", ") +
		" WHERE (" + table + "." + strings.Join(cols[1:], ", "+table+".") + ") IS DISTINCT FROM (excluded." + strings.Join(cols[1:], ", excluded.") + ")"
	var rows [][]any
	load := func() error {
		if len(rows) == 0 {
			return nil
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{target}, cols, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		if merge {
			if _, err := tx.Exec(ctx, mergeSQL); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `TRUNCATE bench_anchor_stage`); err != nil {
				return err
			}
		}
		rows = rows[:0]
		return tx.Commit(ctx)
	}
	n, err := readCSV(path, func(o *order) error {
		rows = append(rows, o.values())
		if len(rows) >= batchRows {
			return load()
		}
		return nil
	})
	if err == nil {
		err = load()
	}
	return n, err
}
