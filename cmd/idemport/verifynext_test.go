package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestVerifyDifferenceProposesReapply deletes rows of an import behind
// idemport's back: verify says so (exit 1) with a next: line, the import
// --reapply that restores them with the flags verify was given (a DSN
// with query values as "$IDEMPORT_INTO"); run in a shell as printed, it restores the table exactly, and verify is clean.
func TestVerifyDifferenceProposesReapply(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"ordinal", "natural"} {
		t.Run(mode, func(t *testing.T) {
			testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
				dir := t.TempDir()
				tg := testkit.NewTarget(t, name, dir)
				rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 120, 97)
				args := []string{"--table", "orders", "orders.csv"}
				if mode == "natural" {
					args = append([]string{"--key", "order_id"}, args...)
				}
				importTo(t, tg, dir, nil, 0, args...)
				if _, err := tg.DB.Exec(`DELETE FROM orders WHERE order_id IN (1000000010, 1000000020)`); err != nil {
					t.Fatal(err)
				}
				v := tg.Exec(t, dir, nil, append([]string{"verify"}, args...)...)
				m := regexp.MustCompile(`(?m)^  next: (idemport import --reapply .*)$`).FindStringSubmatch(v.Stdout)
				if v.Code != 1 || !strings.Contains(v.Stdout, "DIFFERS") || m == nil {
					t.Fatalf("verify after a deletion: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
				}
				sh := exec.Command("sh", "-c", strings.Replace(m[1], "idemport", testkit.Binary(t), 1))
				sh.Dir = dir
				if tg.IsPostgres() { // its DSN's query values are masked: the command reads it from there
					sh.Env = append(sh.Environ(), "IDEMPORT_INTO="+tg.Args[1])
				}
				if out, err := sh.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", m[1], err, out)
				}
				if v := tg.Exec(t, dir, nil, append([]string{"verify"}, args...)...); v.Code != 0 {
					t.Fatalf("verify after the proposed reapply: exit %d\n%s%s", v.Code, v.Stdout, v.Stderr)
				}
				if mode == "natural" {
					checkByKey(t, tg, rows)
				} else {
					checkOrders(t, tg, "orders", rows)
				}
			})
		})
	}
}
