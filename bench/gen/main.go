// Command gen writes the benchmark data set: the "orders" table as CSV,
// JSONL and Parquet, from a seeded generator, so every run measures the
// same bytes.
//
//	go run ./bench/gen -rows 1000000 -out bench/data
//
// It writes orders_<N>.csv, orders_<N>.jsonl and orders_<N>.parquet, where
// N is 1m, 10m or the row count. The columns: order_id (unique, increasing
// with gaps of 1–3), customer_id (6 digits), sku, quantity (1–20),
// unit_price (0.99–999.98, two decimals), status (5 values), created_at
// (RFC 3339, UTC, 2023–2025) and note (30–50 characters; about 5 % empty,
// 10 % with a comma, 3 % with double quotes, 1 % with a line break, so CSV
// needs RFC 4180 quoting).
//
// With -day2 it writes only orders_<N>_day2.csv, the next day's full
// extract of the same table: 1 % of the orders deleted, 5 % updated (status
// and quantity changed), and 1 % new orders appended after the last id.
//
// With -delta it writes only orders_<N>_delta.csv, a daily delta of N/10
// rows: every 20th order changed (status and quantity), then as many new
// orders after the last id, so half of its keys are new.
//
// With -width W it writes only orders_<N>_w<W>.csv, the orders with each
// note padded so that every line is W bytes (W ≥ 200), for memory tests.
//
// Formats: csv, jsonl, parquet, and arrows (an Arrow IPC stream of
// record batches of -batch-rows rows).
//
// With -bad it writes only orders_<N>_bad.csv, the orders with quantity
// "n/a" on every row: every row is bad for a quantity typed as int64.
//
// With -narrow it writes only orders_<N>_narrow.csv, a narrower orders
// table of about 45 bytes a row, whose per-row costs weigh more than
// its bytes: order_id (1 to N), customer_id (1–99999), product_id
// (1–9999), quantity (1–10), price (0.50–999.99, two decimals), status (5
// short values) and order_date (YYYY-MM-DD, 2023–2025), none quoted.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/idemport/idemport/bench/orders"
)

type order struct {
	id, customer int64
	sku          string
	qty          int64
	priceCents   int64
	status       string
	created      time.Time
	note         string
}

var (
	statuses = []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	words    = strings.Fields("blue green parcel gift fragile express morning weekend leave door porch neighbour call first box late early back side gate")
	base     = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	span     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Sub(base)
)

func generate(rng *rand.Rand, id int64) order {
	o := order{
		id:         id,
		customer:   100000 + rng.Int64N(900000),
		qty:        1 + rng.Int64N(20),
		priceCents: 99 + rng.Int64N(99900),
		status:     statuses[rng.IntN(len(statuses))],
		created:    base.Add(time.Duration(rng.Int64N(int64(span/time.Second))) * time.Second),
	}
	const letters = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
	var sku [10]byte
	copy(sku[:], "SKU-")
	for i := 4; i < 10; i++ {
		sku[i] = letters[rng.IntN(len(letters))]
	}
	o.sku = string(sku[:])
	r := rng.IntN(100)
	if r < 5 {
		return o
	}
	var b strings.Builder
	n := 30 + rng.IntN(21)
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	s := b.String()[:n]
	switch {
	case r < 15:
		s = strings.Replace(s, " ", ", ", 1)
	case r < 18:
		s = `say "` + s + `"`
	case r < 19:
		s = strings.Replace(s, " ", "\n", 1)
	}
	o.note = s
	return o
}

// Options of the columnar formats.
var (
	batchRows    = flag.Int("batch-rows", 1000, "rows in each record batch of an Arrow IPC stream (format arrows)")
	rowGroupRows = flag.Int("row-group", 0, "rows in each Parquet row group (0: one per 131,072 rows)")
)

func main() {
	rows := flag.Int64("rows", 1_000_000, "rows to write")
	out := flag.String("out", "bench/data", "output directory")
	seed := flag.Uint64("seed", 42, "generator seed")
	formats := flag.String("formats", "csv,jsonl,parquet", "formats to write")
	day2 := flag.Bool("day2", false, "write the next day's extract, orders_<N>_day2.csv, instead")
	delta := flag.Bool("delta", false, "write a daily delta of N/10 rows, orders_<N>_delta.csv, instead")
	width := flag.Int("width", 0, "write the orders with lines of this many bytes, orders_<N>_w<W>.csv, instead")
	bad := flag.Bool("bad", false, "write the orders with a quantity that is not a number, orders_<N>_bad.csv, instead")
	narrow := flag.Bool("narrow", false, "write a narrower orders table of 7 short columns, orders_<N>_narrow.csv, instead")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprint(*rows)
	switch {
	case *rows%1_000_000 == 0:
		name = fmt.Sprintf("%dm", *rows/1_000_000)
	case *rows%1000 == 0:
		name = fmt.Sprintf("%dk", *rows/1000)
	}
	if *narrow {
		path := filepath.Join(*out, "orders_"+name+"_narrow.csv")
		if err := writeNarrow(path, *rows, *seed); err != nil {
			log.Fatalf("%s: %v", path, err)
		}
		fmt.Println(path)
		return
	}
	iter := func(f func(order) error) error { return each(*rows, *seed, f) }
	suffix := ""
	switch {
	case *day2:
		iter = func(f func(order) error) error { return eachDay2(*rows, *seed, f) }
		*formats, suffix = "csv", "_day2"
	case *delta:
		iter = func(f func(order) error) error { return eachDelta(*rows, *seed, f) }
		*formats, suffix = "csv", "_delta"
	case *width > 0:
		if *width < 200 {
			log.Fatal("-width: at least 200 bytes")
		}
		iter = func(f func(order) error) error {
			return each(*rows, *seed, func(o order) error { return f(pad(o, *width)) })
		}
		*formats, suffix = "csv", fmt.Sprintf("_w%d", *width)
	case *bad:
		iter = func(f func(order) error) error {
			return each(*rows, *seed, func(o order) error { o.qty = badQty; return f(o) })
		}
		*formats, suffix = "csv", "_bad"
	}
	for _, f := range strings.Split(*formats, ",") {
		path := filepath.Join(*out, "orders_"+name+suffix+"."+f)
		if err := write(path, f, iter); err != nil {
			log.Fatalf("%s: %v", path, err)
		}
		fmt.Println(path)
	}
}

// each calls f for every generated order, in order.
func each(rows int64, seed uint64, f func(order) error) error {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	id := int64(1_000_000_000)
	for i := int64(0); i < rows; i++ {
		id += 1 + rng.Int64N(3)
		if err := f(generate(rng, id)); err != nil {
			return err
		}
	}
	return nil
}

// eachDay2 calls f for every order of the next day's extract: the orders
// of each(rows, seed) less 1 % deleted, with 5 % updated, then rows/100 new
// orders. It draws its changes from its own generator, so the orders it
// keeps are exactly the first day's.
func eachDay2(rows int64, seed uint64, f func(order) error) error {
	rng := rand.New(rand.NewPCG(seed, 0xda7e2))
	last := int64(0)
	err := each(rows, seed, func(o order) error {
		last = o.id
		switch r := rng.IntN(100); {
		case r < 1:
			return nil // deleted at the source
		case r < 6:
			o.status = statuses[(slices.Index(statuses, o.status)+1)%len(statuses)]
			o.qty = 1 + o.qty%20
		}
		return f(o)
	})
	if err != nil {
		return err
	}
	for i := int64(0); i < rows/100; i++ {
		last += 1 + rng.Int64N(3)
		if err := f(generate(rng, last)); err != nil {
			return err
		}
	}
	return nil
}

// eachDelta calls f for every order of a daily delta of rows/10 orders:
// every 20th order of each(rows, seed) changed, then rows/20 new orders.
func eachDelta(rows int64, seed uint64, f func(order) error) error {
	rng := rand.New(rand.NewPCG(seed, 0xde17a))
	last, i := int64(0), int64(0)
	err := each(rows, seed, func(o order) error {
		last, i = o.id, i+1
		if i%20 != 0 {
			return nil
		}
		o.status = statuses[(slices.Index(statuses, o.status)+1)%len(statuses)]
		o.qty = 1 + o.qty%20
		return f(o)
	})
	if err != nil {
		return err
	}
	for i := int64(0); i < rows/20; i++ {
		last += 1 + rng.Int64N(3)
		if err := f(generate(rng, last)); err != nil {
			return err
		}
	}
	return nil
}

// pad returns o with its note lengthened, with words and no character
// that needs quoting, until o's CSV line is width bytes.
func pad(o order, width int) order {
	o.note = ""
	n := width - len(csvLine(nil, o))
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(words[(int(o.id)+i)%len(words)])
		b.WriteByte(' ')
	}
	o.note = strings.TrimRight(b.String()[:n], " ") // a note ending in a space would not round-trip as text
	for len(o.note) < n {
		o.note += "x"
	}
	return o
}

// badQty marks an order whose quantity is written "n/a".
const badQty = -1

// csvLine appends o's line of the CSV file to buf.
func csvLine(buf []byte, o order) []byte {
	buf = strconv.AppendInt(buf, o.id, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, o.customer, 10)
	buf = append(buf, ',')
	buf = append(buf, o.sku...)
	buf = append(buf, ',')
	if o.qty == badQty {
		buf = append(buf, "n/a"...)
	} else {
		buf = strconv.AppendInt(buf, o.qty, 10)
	}
	buf = append(buf, ',')
	buf = fmt.Appendf(buf, "%d.%02d", o.priceCents/100, o.priceCents%100)
	buf = append(buf, ',')
	buf = append(buf, o.status...)
	buf = append(buf, ',')
	buf = o.created.AppendFormat(buf, time.RFC3339)
	buf = append(buf, ',')
	if strings.ContainsAny(o.note, ",\"\n") {
		buf = append(buf, '"')
		buf = append(buf, strings.ReplaceAll(o.note, `"`, `""`)...)
		buf = append(buf, '"')
	} else {
		buf = append(buf, o.note...)
	}
	return append(buf, '\n')
}

// write writes the orders iter yields to path in format, through a
// temporary file renamed when complete, so that an interrupted run leaves
// no partial data set for the next to take as whole.
func write(path, format string, iter func(func(order) error) error) error {
	if err := writeFile(path+".part", format, iter); err != nil {
		os.Remove(path + ".part")
		return err
	}
	return os.Rename(path+".part", path)
}

func writeFile(path, format string, iter func(func(order) error) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	switch format {
	case "parquet":
		return writeParquet(f, iter)
	case "arrows":
		return writeArrows(f, iter)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	switch format {
	case "csv":
		w.WriteString(strings.Join(orders.Columns, ",") + "\n")
		err = iter(func(o order) error {
			buf = csvLine(buf[:0], o)
			_, err := w.Write(buf)
			return err
		})
	case "jsonl":
		err = iter(func(o order) error {
			note, _ := json.Marshal(o.note)
			buf = buf[:0]
			buf = fmt.Appendf(buf, `{"order_id":%d,"customer_id":%d,"sku":"%s","quantity":%d,"unit_price":%d.%02d,"status":"%s","created_at":"%s","note":%s}`+"\n",
				o.id, o.customer, o.sku, o.qty, o.priceCents/100, o.priceCents%100, o.status, o.created.Format(time.RFC3339), note)
			_, err := w.Write(buf)
			return err
		})
	default:
		return fmt.Errorf("unknown format %q", format)
	}
	if err != nil {
		return err
	}
	return w.Flush()
}

func writeParquet(f *os.File, iter func(func(order) error) error) error {
	schema := orders.Schema(arrow.Second)
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(true)}
	if *rowGroupRows > 0 {
		opts = append(opts, parquet.WithMaxRowGroupLength(int64(*rowGroupRows)))
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	write := w.Write // a row group per batch
	if *rowGroupRows > 0 {
		write = w.WriteBuffered // row groups of -row-group rows, whatever the batches
	}
	if err := batches(schema, 131072, iter, write); err != nil {
		return err
	}
	return w.Close()
}

// writeArrows writes an Arrow IPC stream of record batches of -batch-rows
// rows, as streaming writers (a Flight endpoint, a Kafka consumer) leave
// many small batches.
func writeArrows(f *os.File, iter func(func(order) error) error) error {
	schema := orders.Schema(arrow.Second)
	bw := bufio.NewWriterSize(f, 1<<20)
	w := ipc.NewWriter(bw, ipc.WithSchema(schema))
	if err := batches(schema, *batchRows, iter, w.Write); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// batches calls write with the orders iter yields, in record batches of n
// rows.
func batches(schema *arrow.Schema, n int, iter func(func(order) error) error, write func(arrow.RecordBatch) error) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return write(rec)
	}
	rows := 0
	err := iter(func(o order) error {
		b.Field(0).(*array.Int64Builder).Append(o.id)
		b.Field(1).(*array.Int64Builder).Append(o.customer)
		b.Field(2).(*array.StringBuilder).Append(o.sku)
		b.Field(3).(*array.Int64Builder).Append(o.qty)
		b.Field(4).(*array.Float64Builder).Append(float64(o.priceCents) / 100)
		b.Field(5).(*array.StringBuilder).Append(o.status)
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(o.created.Unix()))
		if o.note == "" {
			b.Field(7).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(7).(*array.StringBuilder).Append(o.note)
		}
		if rows++; rows%n == 0 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rows%n != 0 {
		return flush()
	}
	return nil
}

// narrowStatuses are the narrow table's statuses, shorter than the
// orders' own.
var narrowStatuses = []string{"new", "paid", "sent", "done", "void"}

// writeNarrow writes the narrow orders table of rows rows to path, through
// a temporary file renamed when complete.
func writeNarrow(path string, rows int64, seed uint64) error {
	err := func() error {
		f, err := os.Create(path + ".part")
		if err != nil {
			return err
		}
		defer f.Close()
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString("order_id,customer_id,product_id,quantity,price,status,order_date\n")
		rng := rand.New(rand.NewPCG(seed, 0x7a44e))
		days := int64(base.AddDate(3, 0, 0).Sub(base) / (24 * time.Hour))
		var buf []byte
		for id := int64(1); id <= rows; id++ {
			cents := 50 + rng.Int64N(99950)
			buf = strconv.AppendInt(buf[:0], id, 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, 1+rng.Int64N(99999), 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, 1+rng.Int64N(9999), 10)
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, 1+rng.Int64N(10), 10)
			buf = append(buf, ',')
			buf = fmt.Appendf(buf, "%d.%02d", cents/100, cents%100)
			buf = append(buf, ',')
			buf = append(buf, narrowStatuses[rng.IntN(len(narrowStatuses))]...)
			buf = append(buf, ',')
			buf = base.AddDate(0, 0, int(rng.Int64N(days))).AppendFormat(buf, time.DateOnly)
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return f.Close()
	}()
	if err != nil {
		os.Remove(path + ".part")
		return err
	}
	return os.Rename(path+".part", path)
}
