package mysql

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
	"github.com/idemport/idemport/sink/internal/stdsql"
)

// openCompleteStore opens a fresh store reached through a messageProxy,
// and the count of the messages sent through it.
func openCompleteStore(t *testing.T) (drivertest.Store, func() int64) {
	dsn, sent := messageProxy(t, freshDSN(t))
	return drivertest.OpenStore(t, Driver{}, dsn, sink.Settings{}, func(t *testing.T, db *sql.DB) []string { return nil }), sent
}

// TestCompletePartitionInOneMessage: Driver.CompletePartition, one
// message, leaves the partitions, the attempt and the operation as the
// checkpoints' Complete and the ledger's Count, three, leave them, and
// marks and counts nothing for an attempt that no longer holds the
// partition (drivertest.RunCompletePartition).
func TestCompletePartitionInOneMessage(t *testing.T) {
	drivertest.RunCompletePartition(t, openCompleteStore, Driver{}.CompletePartition)
}

// TestClaimPartitionInOneMessage: the checkpoints' ClaimPartition, one
// message, claims what the shared statements, three, claim, and leaves
// the partitions as they leave them: the lowest partition free, its
// boundaries, the attempt it was taken over from once its lease ran out,
// and none when none is free.
func TestClaimPartitionInOneMessage(t *testing.T) {
	var states [2][]string
	var claims [2][]string
	for i, combined := range []bool{false, true} {
		f := drivertest.NewCompleteFx(t, openCompleteStore, nil)
		var ops checkpoint.Ops = stdsql.Checkpoints{S: Driver{}, Prefix: f.St.Prefix}
		if combined {
			ops = Driver{}.Checkpoints(f.St.Prefix)
		}
		claim := func(attempt string) {
			t.Helper()
			tx := f.Begin()
			before := f.Sent()
			p, holder, err := ops.ClaimPartition(t.Context(), tx, f.Op, attempt, 60_000)
			sent := f.Sent() - before
			if err != nil {
				t.Fatalf("combined %v: %s's claim: %v", combined, attempt, err)
			}
			want := int64(1) // the shared statements: 3, or 1 when none is free
			if !combined && p != nil {
				want = 3
			}
			if sent != want {
				t.Errorf("combined %v: %s's claim sent %d messages, want %d", combined, attempt, sent, want)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if p == nil {
				claims[i] = append(claims[i], attempt+": none")
				return
			}
			claims[i] = append(claims[i], fmt.Sprintf("%s: %d first %d rows %d lease %s from %q", attempt, p.Index, p.First, p.Rows, p.LeaseAttempt, holder))
		}
		claim("a1")
		claim("a1")
		if err := f.Cp.Expire(t.Context(), f.St.DB, f.Op, "a1"); err != nil {
			t.Fatal(err)
		}
		claim("a2")
		claim("a2")
		claim("a2")
		claim("a2")
		states[i] = f.State(f.St.DB)
	}
	want := []string{
		`a1: 0 first 1 rows 10 lease a1 from ""`,
		`a1: 1 first 11 rows 10 lease a1 from ""`,
		`a2: 0 first 1 rows 10 lease a2 from "a1"`,
		`a2: 1 first 11 rows 10 lease a2 from "a1"`,
		`a2: 2 first 21 rows 10 lease a2 from ""`,
		`a2: none`,
	}
	if !slices.Equal(claims[0], want) {
		t.Fatalf("the shared statements claimed\n%s\nwant\n%s", strings.Join(claims[0], "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(claims[1], claims[0]) || !slices.Equal(states[1], states[0]) {
		t.Fatalf("ClaimPartition claimed\n%s\nand left\n%s\nthe shared statements\n%s\nand\n%s", strings.Join(claims[1], "\n"),
			strings.Join(states[1], "\n"), strings.Join(claims[0], "\n"), strings.Join(states[0], "\n"))
	}
}
