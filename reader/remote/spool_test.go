package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// TestSpool: a spool downloads the object once, serves every read from
// the local copy, resumes a partial copy by range, and refuses a replaced
// object.
func TestSpool(t *testing.T) {
	for _, s := range stores(t) {
		t.Run(s.name, func(t *testing.T) {
			want := data(500_000)
			s.put(t, "z.csv.gz", want)
			ctx := context.Background()
			obj, err := client(s).Open(ctx, s.url("z.csv.gz"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			sp := remote.NewSpool(obj, dir)
			// A crash left the first 100 000 bytes.
			if err := os.WriteFile(sp.Path(), want[:100_000], 0o600); err != nil {
				t.Fatal(err)
			}
			s.srv.Reset()
			for i := 0; i < 3; i++ {
				rc, err := sp.Open(ctx, int64(i)*1000)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(rc)
				rc.Close()
				if !bytes.Equal(got, want[i*1000:]) {
					t.Fatalf("read %d: %d bytes", i, len(got))
				}
			}
			p := make([]byte, 10)
			if _, err := sp.ReadAt(p, 499_990); err != nil || !bytes.Equal(p, want[499_990:]) {
				t.Fatalf("ReadAt: %v", err)
			}
			if c := s.srv.Counts(); c.Bytes != 400_000 {
				t.Fatalf("fetched %d bytes, want the 400 000 the copy lacked (%+v)", c.Bytes, c)
			}
			if err := sp.Remove(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(sp.Path()); !os.IsNotExist(err) {
				t.Fatalf("the copy is still there: %v", err)
			}

			// Replaced before the copy is complete: source changed.
			sp = remote.NewSpool(obj, dir)
			s.put(t, "z.csv.gz", bytes.ToUpper(want))
			if _, err := sp.Open(ctx, 0); !errors.Is(err, reader.ErrSourceChanged) {
				t.Fatalf("replaced object: %v", err)
			}
			sp.Remove()
		})
	}
}
