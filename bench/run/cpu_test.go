package main

import (
	"runtime"
	"slices"
	"testing"
)

// TestRunMeasuresCPU checks that a timed command's CPU time is measured:
// a shell loop spends it in its own process.
func TestRunMeasuresCPU(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	m, err := run(cmd{name: "loop", argv: []string{"sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.cpu <= 0 || m.cpu > 2*m.wall {
		t.Fatalf("cpu %v of a command that ran %v", m.cpu, m.wall)
	}
}

// TestFixedTimesTheImportWithoutItsPlan checks that section fixed times
// each import beside the same import with --rehash, resumed after a kill
// at failpoint after-plan, and reports their paired CPU ratio.
func TestFixedTimesTheImportWithoutItsPlan(t *testing.T) {
	f := &fakeTimer{}
	e, _ := newFakeEnv(t, f)
	var rows []row
	e.add = func(r row) { rows = append(rows, r) }
	e.fixed("", true, false)
	if len(f.ran) != 4 || len(rows) != 4 {
		t.Fatalf("ran %d commands and reported %d rows, want 4 and 4", len(f.ran), len(rows))
	}
	for i := 0; i < len(f.ran); i += 2 {
		full, after := f.ran[i].argv, f.ran[i+1].argv
		want := slices.Insert(slices.Clone(full), len(full)-1, "--rehash")
		if !slices.Equal(after, want) {
			t.Errorf("resumed run %q, want %q", after, want)
		}
		if f.ran[i+1].setup == nil {
			t.Errorf("resumed run %q has no setup to kill the import after its plan", after)
		}
		if r := rows[i+1]; r.cpuRatio != 0.5 || r.vs != rows[i].label {
			t.Errorf("row %+v: want CPU ratio 0.5 against %q", r, rows[i].label)
		}
	}
}
