//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestFIFO imports a named pipe by its path, its format from --name.
func TestFIFO(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		fifo := filepath.Join(dir, "drop")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			f.WriteString("id,city\n1,Köln\n2,\"São\nPaulo\"\n")
			f.Close()
		}()
		run := tg.Exec(t, dir, nil, "import", "--spool-dir", filepath.Join(dir, "spool"), "--name", "cities.csv", fifo)
		if run.Code != 0 || !strings.HasPrefix(run.Stdout, "cities.csv: imported 2 rows into cities") {
			t.Fatalf("FIFO: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		checkTable(t, tg, "cities", [][]string{{"id", "city"}, {"1", "Köln"}, {"2", "São\nPaulo"}})
	})
}
