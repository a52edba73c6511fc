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
// and before its rows are read: the replay is refused (ErrReplay, which the
// command makes exit 5), as is any other replay file that cannot be applied
// as it is, and the error still says why.
func TestReplayFileChangedWhileRead(t *testing.T) {
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
	schema := reader.Schema{{Name: "id", Type: idemtype.Int64}, {Name: "v", Type: idemtype.String}}
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
	batches, _, err := collectReplayBatches(path, f, plan, schema, nil)
	for _, b := range batches {
		b.Release()
	}
	if !errors.Is(err, ErrReplay) || !errors.Is(err, reader.ErrSourceChanged) {
		t.Fatalf("reading a replay file changed since its plan: got %v, want ErrReplay wrapping ErrSourceChanged", err)
	}
}
