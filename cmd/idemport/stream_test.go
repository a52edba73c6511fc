package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// pipe runs the binary against tg with in on its standard input (a pipe).
func pipe(t *testing.T, tg *testkit.Target, dir string, env []string, in string, args ...string) testkit.Run {
	t.Helper()
	cmd := tg.Cmd(t, dir, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(in), &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return testkit.Wait(t, cmd)
}

// TestStandardInput imports a pipe with "-" and the same bytes through
// /dev/stdin: the second is a duplicate (the identity is the content);
// the table holds the stream's rows. A stream without --format or a
// --name with an extension is a usage error that records nothing. A pipe
// killed after its first partition commit resumes when the same bytes
// are piped again, and the table ends exact; the private copies are
// removed.
func TestStandardInput(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("id,name,amount\n")
	want := [][]string{{"id", "name", "amount"}}
	for i := 1; i <= 250; i++ {
		fmt.Fprintf(&b, "%d,name %d,%d.%02d\n", i, i, i, i%100)
		want = append(want, []string{fmt.Sprint(i), fmt.Sprintf("name %d", i), fmt.Sprintf("%d.%02d", i, i%100)})
	}
	data := b.String()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		spool := filepath.Join(dir, "spool")
		tg := testkit.NewTarget(t, name, dir)
		run := pipe(t, tg, dir, nil, data, "import", "--spool-dir", spool, "--table", "s", "-")
		if run.Code != 2 || !strings.Contains(run.Stdout+run.Stderr, "needs --format") || tg.TableExists(t, "s") {
			t.Fatalf("no format: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		run = pipe(t, tg, dir, nil, data, "import", "--spool-dir", spool, "--table", "s", "--format", "csv", "--column", "amount:string", "-")
		if run.Code != 0 || !strings.HasPrefix(run.Stdout, "stdin: imported 250 rows into s") {
			t.Fatalf("pipe: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		checkTable(t, tg, "s", want)
		run = pipe(t, tg, dir, nil, data, "import", "--spool-dir", spool, "--table", "s", "--format", "csv", "--column", "amount:string", "/dev/stdin")
		if run.Code != 0 || !strings.Contains(run.Stdout, "already imported into s") {
			t.Fatalf("the same bytes again: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		checkTable(t, tg, "s", want)
		if got := testkit.Query(t, tg.DB, "SELECT file_path FROM "+tg.Ledger("operations")+" WHERE table_name = 's'"); len(got) != 1 || got[0][0] != "stdin" {
			t.Fatalf("the ledger knows the stream as %v", got)
		}

		args := []string{"import", "--spool-dir", spool, "--table", "k", "--name", "orders.csv", "--column", "amount:string", "--partition-rows", "50", "-"}
		run = pipe(t, tg, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:2"}, data, args...)
		if run.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		if n := testkit.Int(t, tg.DB, `SELECT count(*) FROM k`); n != 100 {
			t.Fatalf("killed after 2 partitions, the table has %d rows", n)
		}
		run = pipe(t, tg, dir, nil, data, args...)
		if run.Code != 0 || !strings.HasPrefix(run.Stdout, "orders.csv: resumed") {
			t.Fatalf("resume: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		checkTable(t, tg, "k", want)
		if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
			t.Fatalf("copies left in the spool: %v", left)
		}
		if st, err := os.Stat(spool); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("spool directory: %v %v", st, err)
		}
	})
}
