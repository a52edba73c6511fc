//go:build !windows

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
)

// A first import of a remote object hashes it from a stream that fills
// the spooled copy its partitions are then read from. These tests kill or
// freeze such an import between the hash and its first committed
// partition, where the copy is complete and nothing is written yet.

// remoteCrashObject puts 20,000 orders (seed) on a new S3 server as
// s3://bkt/in/orders.csv and returns the test's directory, a SQLite
// target in it, the server, a run's environment, the object's rows and
// bytes, the spool directory and the arguments of an import of it in 10
// partitions (without the command).
func remoteCrashObject(t *testing.T, seed int) (dir string, tg *testkit.Target, s3 *remotetest.Server, env []string, want [][]string, data []byte, spool string, args []string) {
	t.Helper()
	dir = t.TempDir()
	tg = testkit.NewTarget(t, testkit.SQLite, dir)
	s3 = remotetest.NewS3(t, "bkt")
	env = s3.Env(dir)
	want = testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20000, seed)
	data, err := os.ReadFile(filepath.Join(dir, "orders.csv"))
	if err != nil {
		t.Fatal(err)
	}
	s3.Put(t, "bkt", "in/orders.csv", data, time.Time{})
	spool = filepath.Join(dir, "spool")
	args = []string{"--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool, "--partition-rows", "2000", "s3://bkt/in/orders.csv"}
	return dir, tg, s3, env, want, data, spool, args
}

// checkAsFromDisk asserts that tg's table orders holds, value by value,
// the rows an import of data from disk (as orders.csv, in dir/local) makes
// in a fresh target of the same kind; res, the import's results, is shown
// when it does not.
func checkAsFromDisk(t *testing.T, tg *testkit.Target, dir string, data []byte, res []result) {
	t.Helper()
	localDir := filepath.Join(dir, "local")
	if err := os.Mkdir(localDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(localDir, "orders.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	local := testkit.NewTarget(t, tg.Name, localDir)
	remoteImport(t, local, localDir, nil, 0, "orders.csv")
	got, want := tableRows(t, tg, "orders"), tableRows(t, local, "orders")
	if len(got) != len(want) {
		t.Fatalf("%d rows, want the %d of the bytes the object now holds alone (import: %+v)", len(got), len(want), res)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d (sorted) is\n%s\nwhere the object now holds\n%s\n(import: %+v)", i, got[i], want[i], res)
		}
	}
}

// TestRemoteKilledBetweenHashAndWrite kills (SIGKILL) the import of a
// 10-partition CSV object at each point between its hash and its first
// commit. The killed run fetched the object once; the rerun imports it
// exactly (every row once, the operation completed, the counters adding
// up), fetches at most the object once more, and leaves the spool empty.
func TestRemoteKilledBetweenHashAndWrite(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"after-identify", "after-claim", "after-plan", "after-partition-claim", "inside-partition"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir, tg, s3, env, want, data, spool, args := remoteCrashObject(t, 141)
			size := int64(len(data))
			killed := tg.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT="+point), append([]string{"import"}, args...)...)
			if killed.Signal != syscall.SIGKILL {
				t.Fatalf("not killed at %s: exit %d\n%s%s", point, killed.Code, killed.Stdout, killed.Stderr)
			}
			first := s3.Counts()
			if first.Bytes < size || first.Bytes > size*11/10 {
				t.Fatalf("the killed run fetched %d bytes of a %d-byte object, want it once (%+v)", first.Bytes, size, first)
			}
			s3.Reset()
			res := remoteImport(t, tg, dir, env, 0, args...)
			if len(res) != 1 || (res[0].Outcome != "imported" && res[0].Outcome != "resumed") {
				t.Fatalf("rerun after a kill at %s: %+v", point, res)
			}
			again := s3.Counts()
			t.Logf("%s: the killed run fetched %d bytes (%.2f×), the rerun %d (%.2f×) in %d GETs and %d HEADs",
				point, first.Bytes, float64(first.Bytes)/float64(size), again.Bytes, float64(again.Bytes)/float64(size), again.Get, again.Head)
			if again.Bytes > size*11/10 {
				t.Fatalf("the rerun fetched %d bytes of a %d-byte object, want at most about once (%+v)", again.Bytes, size, again)
			}
			checkExact(t, tg, "ordinal", want)
			if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
				t.Fatalf("the spool holds %v after the import completed", left)
			}
		})
	}
}

// TestRemoteReplacedBetweenHashAndWrite replaces the object (same size,
// other bytes) after its hash filled the spooled copy and before any
// partition was written: frozen there, the attempt stops with "source
// changed" and writes nothing, though the copy holds every hashed byte;
// killed there, the rerun hashes the new version, which the copy of the
// old one is not taken for. Either way the table ends up holding the new
// version's rows alone, as an import of it from disk makes them.
func TestRemoteReplacedBetweenHashAndWrite(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"frozen", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir, tg, s3, env, _, v1, spool, args := remoteCrashObject(t, 151)
			v2 := bytes.Clone(v1)
			v2[len(v2)-5] = 'Z' // inside the last partition, same size
			if how == "frozen" {
				cmd := tg.Cmd(t, dir, append(env, "IDEMPORT_FAILPOINT=after-plan:1:stop"), append([]string{"import", "--output", "json"}, args...)...)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill() })
				testkit.WaitStopped(t, cmd.Process.Pid)
				if names, _ := filepath.Glob(filepath.Join(spool, "*.spool")); len(names) != 1 {
					t.Fatalf("spool after the hash: %v, want the copy", names)
				} else if got, _ := os.ReadFile(names[0]); !bytes.Equal(got, v1) {
					t.Fatalf("the copy holds %d bytes, not the %d hashed", len(got), len(v1))
				}
				s3.Put(t, "bkt", "in/orders.csv", v2, time.Time{})
				testkit.Continue(cmd.Process)
				r := testkit.Wait(t, cmd)
				if r.Code != 1 || !strings.Contains(r.Stdout, "source changed") {
					t.Fatalf("exit %d: %s", r.Code, r.Stdout)
				}
				if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM orders`); n != 0 {
					t.Fatalf("%d rows written by the attempt whose object changed", n)
				}
			} else {
				killed := tg.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-plan"), append([]string{"import"}, args...)...)
				if killed.Signal != syscall.SIGKILL {
					t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
				}
				s3.Put(t, "bkt", "in/orders.csv", v2, time.Time{})
			}
			res := remoteImport(t, tg, dir, env, 0, args...)
			if len(res) != 1 || res[0].Outcome != "imported" {
				t.Fatalf("the new version: %+v", res)
			}
			checkAsFromDisk(t, tg, dir, v2, res)
		})
	}
}

// TestRemoteUnprovenCopyNotReused imports a CSV object from an HTTP server
// that sends neither an ETag nor a Last-Modified, so nothing proves which
// version of it a run reads, and kills the import when its spooled copy is
// complete (after the plan) or partly filled (from the server, as the
// third window is asked for). The object is then replaced by other bytes
// of the same size: the rerun imports the object as it is now, never the
// copy the killed run left, and the table holds, value by value, the rows
// an import of the new bytes from disk makes.
func TestRemoteUnprovenCopyNotReused(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, how := range []string{"complete", "partial"} {
			t.Run(how, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20000, 161)
				v1, err := os.ReadFile(filepath.Join(dir, "orders.csv"))
				if err != nil {
					t.Fatal(err)
				}
				// v2: the same size, a digit changed in the first window and
				// one in the last partition.
				v2 := bytes.Clone(v1)
				for _, from := range []int{1000, len(v2) - 40} {
					i := from + bytes.IndexAny(v2[from:], "0123456789")
					v2[i] = '0' + (v2[i]-'0'+1)%10
				}
				var current atomic.Pointer[[]byte]
				current.Store(&v1)
				var gets atomic.Int64
				var onGet atomic.Pointer[func()]
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet {
						gets.Add(1)
						if f := onGet.Load(); f != nil {
							(*f)()
						}
					}
					// No ETag, no Last-Modified: nothing to tell versions apart.
					http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(*current.Load()))
				}))
				t.Cleanup(srv.Close)
				spool := filepath.Join(dir, "spool")
				args := []string{"--spool-dir", spool, "--partition-rows", "2000", srv.URL + "/in/orders.csv"}

				if how == "complete" {
					killed := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-plan"}, append([]string{"import"}, args...)...)
					if killed.Signal != syscall.SIGKILL {
						t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
					}
				} else {
					cmd := tg.Cmd(t, dir, nil, append([]string{"import"}, args...)...)
					kill := func() {
						if gets.Load() == 3 {
							cmd.Process.Kill()
						}
					}
					onGet.Store(&kill)
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					if r := testkit.Wait(t, cmd); r.Signal != syscall.SIGKILL {
						t.Fatalf("not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
					}
					onGet.Store(nil)
				}
				names, _ := filepath.Glob(filepath.Join(spool, "*.spool"))
				if len(names) != 1 {
					t.Fatalf("spool after the kill: %v, want the copy", names)
				}
				if got, _ := os.ReadFile(names[0]); len(got) == 0 || !bytes.Equal(got, v1[:len(got)]) {
					t.Fatalf("the copy holds %d bytes, not the first bytes of the version read", len(got))
				}
				current.Store(&v2)

				res := remoteImport(t, tg, dir, nil, 0, args...)
				checkAsFromDisk(t, tg, dir, v2, res)
				if len(res) != 1 || res[0].Outcome != "imported" {
					t.Fatalf("the new version: %+v", res)
				}
			})
		}
	})
}

// TestRemoteRefusedRowsKilledThenRerun imports accountsCSV from a remote
// object through a spooled copy: an S3 object (its ETag proves its
// version, so a rerun may read the copy a killed run left), the same
// gzip-compressed, and an HTTP object that proves no version (each attempt
// makes a copy of its own). The import is killed while it isolates the
// rows the database refused, whose text is read again from the copy; the
// rerun ends exact, each refused row quarantined once with the object's
// text, and the spool is left empty. A rerun of an S3 object reads its
// partitions from the complete copy the killed run left and fetches none
// of the object's bytes.
func TestRemoteRefusedRowsKilledThenRerun(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		for _, source := range []string{"s3", "s3-gzip", "http"} {
			for _, n := range []int{1, 6} {
				t.Run(fmt.Sprintf("%s/%d", source, n), func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					tg := testkit.NewTarget(t, name, dir)
					accountsTable(t, tg)
					data := []byte(accountsCSV)
					var env []string
					var s3 *remotetest.Server
					spool := filepath.Join(dir, "spool")
					args := []string{"import", "--table", "accounts", "--spool-dir", spool, "--max-rejects", "3", "--partition-rows", "4"}
					switch source {
					case "s3", "s3-gzip":
						key := "in/accounts.csv"
						if source == "s3-gzip" {
							var b bytes.Buffer
							zw := gzip.NewWriter(&b)
							zw.Write(data)
							if err := zw.Close(); err != nil {
								t.Fatal(err)
							}
							data, key = b.Bytes(), key+".gz"
						}
						s3 = remotetest.NewS3(t, "bkt")
						s3.Put(t, "bkt", key, data, time.Time{})
						env = s3.Env(dir)
						args = append(args, "--s3-endpoint", s3.URL, "--s3-path-style", "s3://bkt/"+key)
					case "http":
						srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
							// No ETag, no Last-Modified: nothing proves a version.
							http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
						}))
						t.Cleanup(srv.Close)
						args = append(args, srv.URL+"/in/accounts.csv")
					}
					killed := tg.Exec(t, dir, append(slices.Clone(env), fmt.Sprintf("IDEMPORT_FAILPOINT=inside-isolation:%d", n)), args...)
					if killed.Signal != syscall.SIGKILL {
						t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
					}
					if names, _ := filepath.Glob(filepath.Join(spool, "*.spool")); len(names) != 1 {
						t.Fatalf("spool after the kill: %v, want the copy", names)
					}
					if s3 != nil {
						s3.Reset()
					}
					if res := importTo(t, tg, dir, env, 0, args[1:]...); res.Outcome != "resumed" {
						t.Fatalf("rerun: %+v", res)
					}
					if s3 != nil { // the copy the killed run left is complete, and its object proven
						if c := s3.Counts(); c.Bytes != 0 {
							t.Fatalf("the rerun fetched %d bytes of a %d-byte object, want none: the copy holds it (%+v)", c.Bytes, len(data), c)
						}
					}
					if got := textRows(t, tg, "accounts", "id", "email", "age"); !reflect.DeepEqual(got, accountsWant) {
						t.Fatalf("accounts:\n got  %q\n want %q", got, accountsWant)
					}
					checkRejects(t, tg, accountsRejects)
					got := testkit.Query(t, tg.DB, `SELECT state, rows_read, rows_inserted, rows_rejected FROM `+tg.Ledger("operations"))
					if !reflect.DeepEqual(got, [][]any{{"completed", int64(12), int64(9), int64(3)}}) {
						t.Fatalf("operation: %v", got)
					}
					export := tg.Exec(t, dir, env, "rejects", "export", args[len(args)-1])
					for _, row := range []string{",6,6,a@x,6\n", ",10,10,j@x,-1\n", ",12,13,m@x,12\n"} {
						if export.Code != 0 || !strings.Contains(export.Stdout, row) {
							t.Fatalf("rejects export lacks %q: %d %s%s", row, export.Code, export.Stdout, export.Stderr)
						}
					}
					if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
						t.Fatalf("the spool holds %v after the import completed", left)
					}
				})
			}
		}
	})
}

// TestRemoteRerunReadsTheCopy kills the import of a 10-partition CSV
// object whose ETag proves its version after its first partition
// committed, when the spooled copy is complete, and reruns it with the
// copy as the killed run left it, cut short, or with a byte of it
// changed on disk (the same size), in its last range or in one between
// others. The rerun reads the partitions it applies from the copy, range
// by range as far as each matches the sum recorded while it was written:
// a complete copy spares it any fetch, and the bytes a copy no longer
// holds as written are fetched from the object again, never imported from
// the copy, while the ranges around them are read from it (a changed
// range in the middle costs that range's bytes): every value is the
// object's.
func TestRemoteRerunReadsTheCopy(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"complete", "truncated", "corrupted", "corrupted-middle"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir, tg, s3, env, want, data, spool, args := remoteCrashObject(t, 171)
			size := int64(len(data))
			var bad [2]int64 // the range changed in the middle
			killed := tg.Exec(t, dir, append(env, "IDEMPORT_FAILPOINT=after-partition-commit"), append([]string{"import"}, args...)...)
			if killed.Signal != syscall.SIGKILL {
				t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
			}
			names, _ := filepath.Glob(filepath.Join(spool, "*.spool"))
			if len(names) != 1 {
				t.Fatalf("spool after the kill: %v, want the copy", names)
			}
			if got, _ := os.ReadFile(names[0]); !bytes.Equal(got, data) {
				t.Fatalf("the copy holds %d bytes, not the %d hashed", len(got), len(data))
			}
			switch how {
			case "truncated":
				if err := os.Truncate(names[0], size/2); err != nil {
					t.Fatal(err)
				}
			case "corrupted": // a digit of the last partition's, in the middle of the object's rows
				b := bytes.Clone(data)
				i := int(size) - 200
				i += bytes.IndexAny(b[i:], "0123456789")
				b[i] = '0' + (b[i]-'0'+1)%10
				if err := os.WriteFile(names[0], b, 0o600); err != nil {
					t.Fatal(err)
				}
			case "corrupted-middle": // a digit of the range that holds the object's middle byte
				bad = corruptMiddleRange(t, names[0], data, 0)
			}
			s3.Reset()
			res := remoteImport(t, tg, dir, env, 0, args...)
			if len(res) != 1 || res[0].Outcome != "resumed" {
				t.Fatalf("rerun: %+v", res)
			}
			again := s3.Settled()
			t.Logf("%s: the rerun fetched %d bytes (%.2f×) in %d GETs and %d HEADs",
				how, again.Bytes, float64(again.Bytes)/float64(size), again.Get, again.Head)
			limit := size * 11 / 10
			switch how {
			case "complete":
				limit = 0
			case "corrupted-middle":
				n := bad[1] - bad[0]
				if again.Bytes < n || again.Bytes > n+n/10 {
					t.Fatalf("the rerun fetched %d bytes of a %d-byte object, want about the %d of the range %v changed on disk (%+v)", again.Bytes, size, n, bad, again)
				}
			}
			if again.Bytes > limit {
				t.Fatalf("the rerun fetched %d bytes of a %d-byte object, want at most %d (%+v)", again.Bytes, size, limit, again)
			}
			// One HEAD opens the object, whose ETag proves its version, and
			// one checks it before the operation completes: none per
			// partition.
			if again.Head != 2 {
				t.Fatalf("the rerun made %d HEAD requests for 9 partitions, want 2 (%+v)", again.Head, again)
			}
			checkExact(t, tg, "ordinal", want)
			checkAsFromDisk(t, tg, dir, data, res)
			if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
				t.Fatalf("the spool holds %v after the import completed", left)
			}
		})
	}
}

// corruptMiddleRange changes, in the complete copy of data at path, the
// first digit from skip bytes into the range its sums file records that
// holds the object's middle byte, and returns that range, which is
// neither the copy's first nor its last.
func corruptMiddleRange(t *testing.T, path string, data []byte, skip int) (bad [2]int64) {
	t.Helper()
	size := int64(len(data))
	for _, r := range spoolRanges(t, path+".sums") {
		if r[0] <= size/2 && size/2 < r[1] {
			if r[0] == 0 || r[1] == size {
				t.Fatalf("the range %v of the middle byte is the copy's first or last", r)
			}
			bad = r
		}
	}
	b := bytes.Clone(data)
	at := int(bad[0]) + skip
	i := at + bytes.IndexAny(b[at:bad[1]], "0123456789")
	b[i] = '0' + (b[i]-'0'+1)%10
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return bad
}

// TestRemoteKilledMendingTheCopy kills (SIGKILL) the rerun of a killed
// import of a 10-partition S3 object while it writes back into the copy
// the bytes of a range that failed its check (a digit changed on disk past
// the range's first 64 KiB): killed after the first 64 KiB, the range is
// still not the object's, and the next rerun fetches it once more, writes
// it back and imports every row once, as an import of the object from
// disk does, with the copy removed when the import completes.
func TestRemoteKilledMendingTheCopy(t *testing.T) {
	t.Parallel()
	dir, tg, s3, env, want, data, spool, args := remoteCrashObject(t, 173)
	killed := tg.Exec(t, dir, append(slices.Clone(env), "IDEMPORT_FAILPOINT=after-partition-commit"), append([]string{"import"}, args...)...)
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
	}
	names, _ := filepath.Glob(filepath.Join(spool, "*.spool"))
	if len(names) != 1 {
		t.Fatalf("spool after the kill: %v, want the copy", names)
	}
	bad := corruptMiddleRange(t, names[0], data, 64<<10)
	killed = tg.Exec(t, dir, append(slices.Clone(env), "IDEMPORT_FAILPOINT=inside-mend"), append([]string{"import"}, args...)...)
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("the rerun was not killed writing back the bad range %v: exit %d\n%s%s", bad, killed.Code, killed.Stdout, killed.Stderr)
	}
	got, err := os.ReadFile(names[0])
	if err != nil {
		t.Fatal(err)
	}
	if first := bad[0] + 64<<10; !bytes.Equal(got[:first], data[:first]) || bytes.Equal(got[first:bad[1]], data[first:bad[1]]) {
		t.Fatalf("the copy after the kill: want the range %v's first 64 KiB written back and the rest still changed", bad)
	}
	s3.Reset()
	res := remoteImport(t, tg, dir, env, 0, args...)
	if len(res) != 1 || res[0].Outcome != "resumed" {
		t.Fatalf("rerun: %+v", res)
	}
	again := s3.Settled()
	if n := bad[1] - bad[0]; again.Bytes < n || again.Bytes > n+n/10 {
		t.Fatalf("the rerun fetched %d bytes, want about the %d of the range %v left half written back (%+v)", again.Bytes, n, bad, again)
	}
	checkExact(t, tg, "ordinal", want)
	checkAsFromDisk(t, tg, dir, data, res)
	if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
		t.Fatalf("the spool holds %v after the import completed", left)
	}
}

// spoolRanges returns the ranges ([first, end)) a spool's sums file at
// path records, in the order recorded.
func spoolRanges(t *testing.T, path string) [][2]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const header, record = len("idemport spool sums v1\n") + 8, 8 + 8 + 32
	if len(b) < header {
		t.Fatalf("sums file of %d bytes", len(b))
	}
	var out [][2]int64
	for rec := b[header:]; len(rec) >= record; rec = rec[record:] {
		out = append(out, [2]int64{int64(binary.LittleEndian.Uint64(rec)), int64(binary.LittleEndian.Uint64(rec[8:]))})
	}
	return out
}

// TestRemoteWorkerJoinsAResumedImport kills the import of a 20-partition
// S3 object into PostgreSQL after its first partition committed, the
// spooled copy complete, then reruns it with a worker process joining the
// rerun: both read the partitions they claim from the copy the killed run
// left (each range checked against its recorded sum when first read), so
// together they fetch none of the object's bytes; the table holds every
// row once, value by value, and the last of them to settle removes the
// copy.
func TestRemoteWorkerJoinsAResumedImport(t *testing.T) {
	t.Parallel()
	testkit.Available(t, testkit.Postgres)
	dir := t.TempDir()
	tg := testkit.NewTarget(t, testkit.Postgres, dir)
	s3 := remotetest.NewS3(t, "bkt")
	env := s3.Env(dir)
	const partitions, per = 20, 2500
	want := testkit.Orders(t, filepath.Join(dir, "orders.csv"), partitions*per, 181)
	data, err := os.ReadFile(filepath.Join(dir, "orders.csv"))
	if err != nil {
		t.Fatal(err)
	}
	s3.Put(t, "bkt", "in/orders.csv", data, time.Time{})
	spool := filepath.Join(dir, "spool")
	args := []string{"--s3-endpoint", s3.URL, "--s3-path-style", "--spool-dir", spool, "--partition-rows", fmt.Sprint(per), "s3://bkt/in/orders.csv"}
	killed := tg.Exec(t, dir, append(slices.Clone(env), "IDEMPORT_FAILPOINT=after-partition-commit"), append([]string{"import"}, args...)...)
	if killed.Signal != syscall.SIGKILL {
		t.Fatalf("not killed: exit %d\n%s%s", killed.Code, killed.Stdout, killed.Stderr)
	}
	if names, _ := filepath.Glob(filepath.Join(spool, "*.spool")); len(names) != 1 {
		t.Fatalf("spool after the kill: %v, want the copy", names)
	} else if got, _ := os.ReadFile(names[0]); !bytes.Equal(got, data) {
		t.Fatalf("the copy holds %d bytes, not the object's %d", len(got), len(data))
	}
	s3.Reset()

	importAtOnce(t, tg, dir, env, 2, partitions, args...) // the rerun, and a worker joining it
	checkExact(t, tg, "ordinal", want)
	checkAsFromDisk(t, tg, dir, data, nil)
	c := s3.Settled()
	t.Logf("the rerun and its worker fetched %d bytes of a %d-byte object in %d GETs and %d HEADs", c.Bytes, len(data), c.Get, c.Head)
	if c.Bytes != 0 {
		t.Fatalf("the rerun and its worker fetched %d bytes of a %d-byte object, want none: the copy holds it (%+v)", c.Bytes, len(data), c)
	}
	// Each opens the object with a HEAD and checks it once more before
	// the operation completes: none per partition.
	if c.Head > 4 {
		t.Fatalf("the rerun and its worker made %d HEAD requests for 19 partitions, want at most 2 each (%+v)", c.Head, c)
	}
	if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
		t.Fatalf("the spool holds %v after the import completed", left)
	}
}
