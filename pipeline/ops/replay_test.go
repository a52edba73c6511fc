package ops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/reader"
)

// TestReplayFileChangedWhileRead changes a replay file after its plan pass
// and before its rows are read, both where replay reads the operation the
// rows name and where it reads the rows themselves: the replay is refused
// (ErrReplay, which the command makes exit 5), as is any other replay file
// that cannot be applied as it is, and the error still says why.
func TestReplayFileChangedWhileRead(t *testing.T) {
	t.Parallel()
	schema := reader.Schema{{Name: "id", Type: idemtype.Int64}, {Name: "v", Type: idemtype.String}}
	for _, tc := range []struct {
		name string
		read func(path string, f *reader.File, plan *reader.Plan) error
	}{
		{"operation", func(path string, f *reader.File, plan *reader.Plan) error {
			_, err := replayKeys(f, plan)
			return err
		}},
		{"rows", func(path string, f *reader.File, plan *reader.Plan) error {
			batches, _, err := collectReplayBatches(path, f, plan, schema, nil)
			for _, b := range batches {
				b.Release()
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "fix.csv")
			header := ReplayTable + "," + ReplayFileID + "," + ReplayRow + ",id,v\n"
			write := func(rows string) {
				t.Helper()
				if err := os.WriteFile(path, []byte(header+rows), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("items,f1,2,2,two\nitems,f1,5,5,five\n")
			f, err := reader.OpenPath(path, reader.Options{Format: reader.CSV, Types: replayTypes(schema)})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Source().Close()
			plan, err := scanReplay(context.Background(), path, f)
			if err != nil {
				t.Fatal(err)
			}
			write("items,f1,2,2,TWO\nitems,f1,5,5,FIVE\n") // as long, other bytes
			err = tc.read(path, f, plan)
			if !errors.Is(err, ErrReplay) || !errors.Is(err, reader.ErrSourceChanged) {
				t.Fatalf("reading a replay file changed since its plan: got %v, want ErrReplay wrapping ErrSourceChanged", err)
			}
		})
	}
}
