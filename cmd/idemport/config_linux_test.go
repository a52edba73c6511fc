package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// TestFullDiskSaysFreeSpace imports into a SQLite file on a file system
// too small for it: the import fails (exit 1, a rerun resumes) saying to
// free space on that directory; with space freed the rerun resumes and the
// table holds the file exactly. It mounts a small tmpfs, which needs root.
func TestFullDiskSaysFreeSpace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root")
	}
	dir := t.TempDir()
	rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 6000, 73)
	mnt := filepath.Join(dir, "small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	// Room for the ledger's tables and the claim, not for the first
	// partition: the import fails once it has an operation to resume.
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=640k"); err != nil {
		t.Fatalf("mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	tg := testkit.NewTarget(t, testkit.SQLite, mnt)
	r := tg.Exec(t, dir, nil, "import", "--partition-rows", "500", "orders.csv")
	if r.Code != exitFailed || !strings.Contains(r.Stdout, "free space on "+mnt+" and rerun; it resumes") {
		t.Fatalf("full disk: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=64m"); err != nil {
		t.Fatalf("grow the tmpfs: %v", err)
	}
	if res := importTo(t, tg, dir, nil, 0, "--partition-rows", "500", "orders.csv"); res.Outcome != "resumed" {
		t.Fatalf("after freeing space: %+v", res)
	}
	checkExact(t, tg, "ordinal", rows)
}
