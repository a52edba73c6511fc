// write.mjs writes bench/gen's orders CSV as other writers than arrow-go
// write it, for bench/run's formats section (-file … -csv …): Parquet
// from the Rust parquet crate (through parquet-wasm) and an Arrow IPC
// file from Arrow JS, with the types such files carry — unit_price
// decimal(12,2), created_at timestamp[ms, UTC], sku and status
// dictionary<utf8, int32>, quantity int32 — and snappy pages.
//
//	npm install parquet-wasm apache-arrow   # in the directory it runs in
//	node write.mjs orders_1m.csv OUTDIR
//
// It writes OUTDIR/orders-rs-1group.parquet (one row group), …-10groups
// (ten), …-dict8m (one group, dictionary pages of up to 8 MiB instead
// of 1 MiB, so that sku and note stay dictionary-encoded) and
// orders-arrowjs.arrow (one record batch). With "fixture" it writes
// only OUTDIR/orders-arrow-rs-groups.parquet, testdata/otherwriters'
// file of many row groups, pages and dictionaries (see its README). The CSV is read as RFC 4180:
// an unquoted empty field is null, a quoted one is text; no value goes
// through a float.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  Table, Field, Schema, Int64, Int32, Utf8, Dictionary, Decimal, TimestampMillisecond,
  makeData, makeVector, vectorFromArray, tableToIPC, RecordBatch, Struct,
} from "apache-arrow";
import * as pq from "parquet-wasm";

const [csvPath, out, mode] = process.argv.slice(2);
const fixture = mode === "fixture";
if (!csvPath || !out || (mode && !fixture)) {
  console.error("usage: node write.mjs ORDERS.csv OUTDIR [fixture]");
  process.exit(2);
}

// parse returns the rows of an RFC 4180 text, each field a string or
// null (an unquoted empty field).
function parse(text) {
  const rows = [];
  let row = [], i = 0;
  const n = text.length;
  while (i < n) {
    let v;
    if (text[i] === '"') {
      let s = "", j = i + 1;
      for (;;) {
        const q = text.indexOf('"', j);
        if (text[q + 1] === '"') { s += text.slice(j, q + 1); j = q + 2; continue; }
        s += text.slice(j, q); i = q + 1; break;
      }
      v = s;
    } else {
      let j = i;
      while (j < n && text[j] !== "," && text[j] !== "\n" && text[j] !== "\r") j++;
      v = j === i ? null : text.slice(i, j);
      i = j;
    }
    row.push(v);
    if (text[i] === ",") { i++; continue; }
    if (text[i] === "\r") i++;
    if (text[i] === "\n") i++;
    rows.push(row);
    row = [];
  }
  return rows;
}

const rows = parse(readFileSync(csvPath, "utf8"));
const header = rows.shift();
const want = ["order_id", "customer_id", "sku", "quantity", "unit_price", "status", "created_at", "note"];
if (header.join() !== want.join()) throw new Error(`columns ${header}, want ${want}`);
const n = rows.length;

function ints(c, Arr, conv) {
  const a = new Arr(n);
  for (let r = 0; r < n; r++) a[r] = conv(rows[r][c]);
  return a;
}

// decimal128 values of scale 2, four little-endian 32-bit words each.
function decimals(c) {
  const words = new Uint32Array(4 * n);
  for (let r = 0; r < n; r++) {
    const m = /^(-?)(\d+)(?:\.(\d{1,2}))?$/.exec(rows[r][c]);
    if (!m) throw new Error(`row ${r + 1}: unit_price ${rows[r][c]}`);
    let v = BigInt(m[2]) * 100n + BigInt((m[3] || "").padEnd(2, "0"));
    if (m[1]) v = -v;
    v = BigInt.asUintN(128, v);
    for (let w = 0; w < 4; w++) words[4 * r + w] = Number((v >> BigInt(32 * w)) & 0xffffffffn);
  }
  return words;
}

const stampType = new TimestampMillisecond("UTC");
const dictType = () => new Dictionary(new Utf8(), new Int32());
const cols = {
  order_id: makeVector(ints(0, BigInt64Array, BigInt)),
  customer_id: makeVector(ints(1, BigInt64Array, BigInt)),
  sku: vectorFromArray(rows.map((r) => r[2]), dictType()),
  quantity: makeVector(ints(3, Int32Array, Number)),
  unit_price: makeVector(makeData({ type: new Decimal(2, 12, 128), length: n, data: decimals(4) })),
  status: vectorFromArray(rows.map((r) => r[5]), dictType()),
  created_at: makeVector(makeData({
    type: stampType, length: n,
    data: ints(6, BigInt64Array, (s) => {
      const ms = Date.parse(s);
      if (Number.isNaN(ms) || !/Z$/.test(s)) throw new Error(`created_at ${s}`);
      return BigInt(ms);
    }),
  })),
  note: vectorFromArray(rows.map((r) => r[7]), new Utf8()),
};
const table = new Table(cols);

const stream = tableToIPC(table, "stream");
// writeParquet takes the table it is given, so each file gets its own.
const write = (name, props) => {
  const wasm = pq.Table.fromIPCStream(stream);
  const b = new pq.WriterPropertiesBuilder().setCompression(pq.Compression.SNAPPY);
  writeFileSync(join(out, name), pq.writeParquet(wasm, props(b).build()));
  console.log(join(out, name));
};
if (fixture) {
  // Small row groups, each column's dictionary full after a few hundred
  // bytes (the rest of its chunk PLAIN) and pages of about 1 KiB: the
  // layout of a large file, in testdata's 300 rows.
  write("orders-arrow-rs-groups.parquet", (b) =>
    b.setMaxRowGroupSize(64).setDictionaryPageSizeLimit(512).setDataPageSizeLimit(1024).setWriteBatchSize(32));
} else {
  write("orders-rs-1group.parquet", (b) => b.setMaxRowGroupSize(n));
  write("orders-rs-10groups.parquet", (b) => b.setMaxRowGroupSize(Math.ceil(n / 10)));
  write("orders-rs-dict8m.parquet", (b) => b.setMaxRowGroupSize(n).setDictionaryPageSizeLimit(8 << 20));
  // tableToIPC writes the table's batches as they are: one here.
  writeFileSync(join(out, "orders-arrowjs.arrow"), tableToIPC(table, "file"));
  console.log(join(out, "orders-arrowjs.arrow"));
}
