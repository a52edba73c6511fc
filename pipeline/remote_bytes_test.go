package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemport/idemport/internal/remotetest"
	"github.com/idemport/idemport/internal/testkit"
	"github.com/idemport/idemport/reader/remote"
)

// TestRemoteFirstImportFetchesOnce imports a 10-partition CSV object from
// S3 and from an HTTP server with a spool directory: the hash and plan
// pass copy the bytes into the spool as they stream, and the partitions
// are applied from the copy, so the import fetches the object's bytes
// about once (before, each partition's range was fetched again, 2×). The
// copy is removed when the import completes.
func TestRemoteFirstImportFetchesOnce(t *testing.T) {
	// Not parallel: the S3 client reads its configuration from the
	// environment of this process (remotetest.Server.SetEnv).
	testkit.Each(t, func(t *testing.T, name string) {
		for _, store := range []string{"s3", "http"} {
			t.Run(store, func(t *testing.T) {
				f := newFx(t, name)
				path := filepath.Join(f.dir, "orders.csv")
				testkit.Orders(t, path, 20000, 131)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var srv *remotetest.Server
				var url string
				client := remote.New(remote.Options{})
				if store == "s3" {
					srv = remotetest.NewS3(t, "bkt")
					srv.SetEnv(t)
					srv.Put(t, "bkt", "in/orders.csv", data, time.Time{})
					url = "s3://bkt/in/orders.csv"
					client = remote.New(remote.Options{Endpoint: srv.URL, PathStyle: true})
				} else {
					srv = remotetest.NewHTTP(t)
					srv.Put(t, "", "in/orders.csv", data, time.Time{})
					url = srv.URL + "/in/orders.csv"
				}
				spool := filepath.Join(f.dir, "spool")
				res := f.e.Import(context.Background(), Request{Path: url, Mapping: Mapping{Table: "orders"}, Remote: client,
					SpoolDir: spool, PartitionRows: 2000})
				if res.Outcome != Imported || res.Rows.Inserted != 20000 || res.Partitions.Total != 10 {
					t.Fatalf("%s: %d rows inserted, %d partitions: %v", res.Outcome, res.Rows.Inserted, res.Partitions.Total, res.Err)
				}
				c := srv.Counts()
				ratio := float64(c.Bytes) / float64(len(data))
				t.Logf("%s: fetched %d bytes of a %d-byte object (%.3f×) in %d GETs and %d HEADs", store, c.Bytes, len(data), ratio, c.Get, c.Head)
				if ratio > 1.1 {
					t.Fatalf("a first import fetched %.2f× the object's bytes (%d of %d), want at most 1.1×", ratio, c.Bytes, len(data))
				}
				if n := f.rows(t, `SELECT count(*), count(DISTINCT order_id) FROM orders`)[0]; fmt.Sprint(n) != "[20000 20000]" {
					t.Fatalf("orders holds %v rows and distinct orders, want 20000 of each", n)
				}
				if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
					t.Fatalf("the spool holds %v after the import completed", left)
				}
			})
		}
	})
}

// TestRemotePrefixRerunListsOnly imports a prefix of 20 small S3 objects,
// then imports it again as a new process would (a new client): the LIST
// page names each object with its ETag and size, which the ledger has
// recorded for the completed operation, so the rerun makes one LIST
// request and no HEAD or GET. --rehash reads every object again; an object
// replaced since (same size, another ETag) is opened, read and imported.
// (It had 200 objects, 13 CPU-s: every object is a file of its own, and
// one LIST page holds up to 1,000, so 20 prove the same.)
func TestRemotePrefixRerunListsOnly(t *testing.T) {
	// Not parallel: the S3 client reads its configuration from the
	// environment of this process (remotetest.Server.SetEnv).
	testkit.Each(t, func(t *testing.T, name string) {
		f := newFx(t, name)
		srv := remotetest.NewS3(t, "bkt")
		srv.SetEnv(t)
		const n = 20
		for i := range n {
			srv.Put(t, "bkt", fmt.Sprintf("many/k%03d.csv", i), []byte(fmt.Sprintf("id,v\n%d,x%03d\n", i, i)), time.Time{})
		}
		ctx := context.Background()
		pass := func(rehash bool) map[Outcome]int {
			t.Helper()
			c := remote.New(remote.Options{Endpoint: srv.URL, PathStyle: true})
			urls, err := c.List(ctx, "s3://bkt/many/", "")
			if err != nil || len(urls) != n {
				t.Fatalf("list: %d objects, %v", len(urls), err)
			}
			seen := map[Outcome]int{}
			for _, u := range urls {
				res := f.e.Import(ctx, Request{Path: u, Mapping: Mapping{Table: "many"}, Remote: c, Rehash: rehash,
					SpoolDir: filepath.Join(f.dir, "spool")})
				if res.Err != nil {
					t.Fatalf("%s: %s: %v", u, res.Outcome, res.Err)
				}
				seen[res.Outcome]++
			}
			return seen
		}
		if seen := pass(false); seen[Imported] != n {
			t.Fatalf("first pass: %v", seen)
		}

		srv.Reset()
		if seen := pass(false); seen[Duplicate] != n {
			t.Fatalf("rerun: %v", seen)
		}
		if c := srv.Counts(); c.List != 1 || c.Head != 0 || c.Get != 0 || c.Other != 0 {
			t.Fatalf("a rerun of %d imported objects made %+v; want one LIST and nothing else", n, c)
		}

		srv.Reset()
		if seen := pass(true); seen[Duplicate] != n {
			t.Fatalf("rerun with --rehash: %v", seen)
		}
		if c := srv.Counts(); c.List != 1 || c.Head != n || c.Get < n {
			t.Fatalf("a rerun with --rehash made %+v; want each object opened and read", c)
		}

		// The size is part of the identity as much as the ETag: with
		// another size recorded for k011 under the same ETag, the listing
		// proves nothing about it, so it is opened and hashed again (and
		// found to be the content imported).
		f.exec(t, `UPDATE `+f.tg.Ledger("remote")+` SET size = size + 1 WHERE url = 's3://bkt/many/k011.csv'`)
		srv.Reset()
		if seen := pass(false); seen[Duplicate] != n {
			t.Fatalf("rerun with another size recorded: %v", seen)
		}
		if c := srv.Counts(); c.List != 1 || c.Head < 1 || c.Head > 2 || c.Get < 1 {
			t.Fatalf("a rerun with another size recorded for one object made %+v; want one LIST, and that object opened and read", c)
		}

		// Replaced since: same size, other bytes, so another ETag.
		srv.Put(t, "bkt", "many/k007.csv", []byte("id,v\n7,y007\n"), time.Time{})
		srv.Reset()
		if seen := pass(false); seen[Duplicate] != n-1 || seen[Imported] != 1 {
			t.Fatalf("rerun after a replacement: %v", seen)
		}
		// The replaced object's HEAD requests (to open it, and to check it
		// before its partition commits) are the only ones.
		if c := srv.Counts(); c.List != 1 || c.Head < 1 || c.Head > 3 || c.Get < 1 {
			t.Fatalf("a rerun with one object replaced made %+v; want one LIST, and the replaced object opened and read", c)
		}
		if got := fmt.Sprint(f.rows(t, `SELECT v FROM many WHERE id = 7 ORDER BY v`)); got != "[[x007] [y007]]" {
			t.Fatalf("id 7: %s, want both versions", got)
		}
	})
}
