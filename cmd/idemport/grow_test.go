package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestPartitionRowsUnsetGrows: plan into SQLite with --key and without
// --partition-rows plans partitions that grow from 100000 rows to
// 1000000, and with --partition-rows 100000 given (its default value),
// partitions of 100000 rows.
func TestPartitionRowsUnsetGrows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := 1; i <= 300001; i++ {
		fmt.Fprintf(&b, "%d,x\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tg := testkit.NewTarget(t, testkit.SQLite, dir)
	for _, c := range []struct {
		args   []string
		parts  int
		growTo int64
	}{{nil, 3, 1000000}, {[]string{"--partition-rows", "100000"}, 4, 0}} {
		args := append([]string{"plan", "--output", "json", "--key", "id"}, c.args...)
		r := tg.Exec(t, dir, nil, append(args, "big.csv")...)
		var p struct {
			Partitions []json.RawMessage `json:"partitions"`
			GrowTo     int64             `json:"partition_grow_to"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil || r.Code != 0 {
			t.Fatalf("plan %v: exit %d, %v\n%s%s", c.args, r.Code, err, r.Stdout, r.Stderr)
		}
		if len(p.Partitions) != c.parts || p.GrowTo != c.growTo {
			t.Errorf("plan %v: %d partitions growing to %d, want %d growing to %d", c.args, len(p.Partitions), p.GrowTo, c.parts, c.growTo)
		}
	}
}
