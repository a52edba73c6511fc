package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/pgtest"
	"github.com/idemport/idemport/internal/testkit"
)

// TestStatusJudgesHolders kills an import inside a partition (SIGKILL) and
// stops another (SIGSTOP): status and history judge each holder as an
// import does, not by its lease alone: the killed one is gone (a rerun
// takes over) and the stopped one stopped, each named host:pid, though
// both leases are still live. A rerun then takes over from the killed one
// and the table holds the file exactly.
func TestStatusJudgesHolders(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		host, _ := os.Hostname()
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 300, 91)
		testkit.Orders(t, filepath.Join(dir, "other.csv"), 300, 92)

		killed := start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2"}, "import", "--lease", "1d", "--partition-rows", "100", "orders.csv")
		if r := testkit.Wait(t, killed.cmd); r.Signal != syscall.SIGKILL {
			t.Fatalf("not killed: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		held := stopped(t, start(t, tg, dir, []string{"IDEMPORT_FAILPOINT=inside-partition:2:stop"}, "import", "--lease", "1d", "--partition-rows", "100", "other.csv")).cmd

		gone := fmt.Sprintf("%s:%d", host, killed.cmd.Process.Pid)
		frozen := fmt.Sprintf("%s:%d", host, held.Process.Pid)
		st := tg.Exec(t, dir, nil, "status")
		if st.Code != 0 || !regexpLine(st.Stdout, `^orders\s+orders\.csv\s+\S+\s+gone \(a rerun takes over\)\s+.*\s`+gone+` \(gone\)\s`) ||
			!regexpLine(st.Stdout, `^other\s+other\.csv\s+\S+\s+stopped\s+.*\s`+frozen+` \(stopped\)\s`) {
			t.Fatalf("status: exit %d\n%s%s", st.Code, st.Stdout, st.Stderr)
		}
		var ops []struct {
			Table  string `json:"table"`
			State  string `json:"state"`
			Leases []struct {
				Attempt string `json:"attempt_id"`
				Host    string `json:"host"`
				PID     int    `json:"pid"`
				State   string `json:"state"`
			} `json:"leases"`
		}
		sj := tg.Exec(t, dir, nil, "status", "-o", "json")
		if err := decodeLines(sj.Stdout, &ops); err != nil || len(ops) != 2 {
			t.Fatalf("status json: %v\n%s", err, sj.Stdout)
		}
		for _, op := range ops {
			want, pid := "gone", killed.cmd.Process.Pid
			if op.Table == "other" {
				want, pid = "stopped", held.Process.Pid
			}
			if op.State != "processing" || len(op.Leases) != 1 || op.Leases[0].State != want || op.Leases[0].Host != host || op.Leases[0].PID != pid ||
				op.Leases[0].Attempt != attemptOf(t, tg, pid) {
				t.Fatalf("status json of %s: %+v, want its lease %s by %s:%d", op.Table, op, want, host, pid)
			}
		}
		h := tg.Exec(t, dir, nil, "history", "orders.csv")
		if h.Code != 0 || !regexpLine(h.Stdout, `^\S+\s+manual\s+`+gone+`\s+\S+ \S+\s+gone \(a rerun takes over\)\s`) {
			t.Fatalf("history: exit %d\n%s%s", h.Code, h.Stdout, h.Stderr)
		}
		if hj := history(t, tg, dir, 0, "other.csv"); len(hj) != 1 || len(hj[0].Attempts) != 1 || hj[0].Attempts[0].Outcome != "stopped" {
			t.Fatalf("history json of the stopped import: %+v", hj)
		}

		// The stopped one, resumed, finishes (on SQLite it holds the write
		// lock); the rerun takes over from the killed one.
		if err := testkit.Continue(held.Process); err != nil {
			t.Fatal(err)
		}
		if err := held.Wait(); err != nil {
			t.Fatalf("the resumed import: %v", err)
		}
		res := importTo(t, tg, dir, nil, 0, "--partition-rows", "100", "orders.csv")
		if res.Outcome != "resumed" || !res.RecoveredLease {
			t.Fatalf("rerun: %+v", res)
		}
		checkOrders(t, tg, "orders", rows)
	})
}

// TestReadOnlyCommandsOnAReadOnlyDatabase runs every command that only
// reads (status, history, verify, plan, rejects list, outbox list) on a
// database the user may not write: on SQLite a read-only file in a
// read-only directory (with root's override of file modes dropped), on
// PostgreSQL as a role that may only SELECT. Each works, as it does for
// its owner; and none writes.
func TestReadOnlyCommandsOnAReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		tg := testkit.NewTarget(t, name, data)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 120, 93)
		os.WriteFile(filepath.Join(dir, "items.csv"), []byte("id,qty\n1,5\n2,five\n3,7\n"), 0o644)
		notify := "exec:true"
		importTo(t, tg, dir, nil, 0, "--partition-rows", "50", "--notify", notify, "orders.csv")
		importTo(t, tg, dir, nil, 0, "--column", "qty:int64", "--max-rejects", "1", "items.csv")
		commands := [][]string{
			{"status"},
			{"history", "orders.csv"},
			{"verify", "orders.csv"},
			{"plan", "orders.csv"},
			{"rejects", "list", "--table", "items", "items.csv"},
			{"outbox", "list"},
		}
		owner := map[string]string{}
		for _, c := range commands {
			r := tg.Exec(t, dir, nil, c...)
			if r.Code != 0 {
				t.Fatalf("%v as the owner: exit %d\n%s%s", c, r.Code, r.Stdout, r.Stderr)
			}
			owner[strings.Join(c, " ")] = r.Stdout
		}
		before := tg.Snapshot(t)

		var run func(args ...string) testkit.Run
		if tg.IsPostgres() {
			role := pgtest.Name()
			for _, q := range []string{
				`CREATE ROLE ` + role + ` LOGIN`,
				`GRANT USAGE ON SCHEMA ` + testkit.QuoteOne(tg.Schema) + ` TO ` + role,
				`GRANT SELECT ON ALL TABLES IN SCHEMA ` + testkit.QuoteOne(tg.Schema) + ` TO ` + role,
			} {
				if _, err := tg.DB.ExecContext(context.Background(), q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			t.Cleanup(func() {
				tg.DB.Exec(`DROP OWNED BY ` + role)
				tg.DB.Exec(`DROP ROLE ` + role)
			})
			u, err := url.Parse(pgtest.URL(t, tg.Schema))
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.User(role)
			run = func(args ...string) testkit.Run {
				return testkit.Exec(t, dir, nil, append([]string{args[0], "--into", u.String(), "--state-schema", tg.Schema}, args[1:]...)...)
			}
		} else {
			undo := makeReadOnly(t, tg.Path)
			if err := os.Chmod(data, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(data, 0o755); undo() })
			run = func(args ...string) testkit.Run {
				return testkit.Wait(t, launch(t, modesBind(t, tg.Cmd(t, dir, nil, args...))).cmd)
			}
		}
		for _, c := range commands {
			r := run(c...)
			if r.Code != 0 || normalize(r.Stdout) != normalize(owner[strings.Join(c, " ")]) {
				t.Fatalf("%v where the user may not write: exit %d\n%s%s\nwant:\n%s", c, r.Code, r.Stdout, r.Stderr, owner[strings.Join(c, " ")])
			}
		}
		if diff := before.Diff(tg.Snapshot(t)); diff != "" {
			t.Fatalf("the read-only commands changed the database:\n%s", diff)
		}
		var ops []json.RawMessage
		if err := decodeLines(run("status", "-o", "json").Stdout, &ops); err != nil || len(ops) != 2 {
			t.Fatalf("status json: %v %d", err, len(ops))
		}
	})
}
