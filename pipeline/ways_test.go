package pipeline

import (
	"context"
	"database/sql"
	"testing"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/migrate"
	"github.com/idemport/idemport/sink"
)

// partitionCompleter is the way the store asks a driver to mark a
// partition done and count it in one statement.
type partitionCompleter interface {
	CompletePartition(ctx context.Context, tx *sql.Tx, prefix string, op checkpoint.Op, idx int, attempt string, c idemtype.Rows) (int64, error)
}

// traits is sink.Traits under a name other than its method's (a struct
// embedding sink.Traits has a field Traits, which hides the method).
type traits interface{ Traits() sink.Database }

// ways are the optional interfaces beyond sink.Driver that the pipeline,
// its store and the migrations ask a driver for: each the driver's own,
// or a test's stand-in for it, nil where the driver lacks it.
type ways struct {
	together      migrate.Together
	denier        sink.Denier
	traits        traits
	completer     partitionCompleter
	ensurer       connEnsurer
	heldDescribed describingHolder
	writerFor     describedWriter
	lazy          lazyCommitter
	opener        partitionOpener
	holder        columnsHolder
	versioner     columnsVersioner
}

// waysOf returns the ways d has.
func waysOf(d any) ways {
	var w ways
	w.together, _ = d.(migrate.Together)
	w.denier, _ = d.(sink.Denier)
	w.traits, _ = d.(traits)
	w.completer, _ = d.(partitionCompleter)
	w.ensurer, _ = d.(connEnsurer)
	w.heldDescribed, _ = d.(describingHolder)
	w.writerFor, _ = d.(describedWriter)
	w.lazy, _ = d.(lazyCommitter)
	w.opener, _ = d.(partitionOpener)
	w.holder, _ = d.(columnsHolder)
	w.versioner, _ = d.(columnsVersioner)
	return w
}

// has tells which ways are set, in the fields' order.
func (w ways) has() [11]bool {
	return [...]bool{w.together != nil, w.denier != nil, w.traits != nil, w.completer != nil, w.ensurer != nil,
		w.heldDescribed != nil, w.writerFor != nil, w.lazy != nil, w.opener != nil, w.holder != nil, w.versioner != nil}
}

// The sets of ways of the drivers a test wraps.
var (
	postgresWays = [11]bool{true, true, false, true, true, true, true, true, true, true, true}
	mariadbWays  = [11]bool{true, true, false, true, false, false, true, false, false, true, true}
	sqliteWays   = [11]bool{false, false, true, false, false, false, false, false, false, false, false}
)

// withWays returns d, a test's wrapper of a driver that claims
// sink.Driver's methods only, claiming also the ways set in w and no
// other, so that an import through it takes the paths it takes on the
// driver w came from (waysOf, with a test's stand-ins): a wrapper that
// claimed a way the driver lacks would fail (panic) when the pipeline
// took it, and one that hid a way would test another path. A set of
// ways no wrapper is written for fails t.
func withWays(t *testing.T, d sink.Driver, w ways) sink.Driver {
	t.Helper()
	var out sink.Driver
	switch w.has() {
	case postgresWays:
		out = struct {
			sink.Driver
			migrate.Together
			sink.Denier
			partitionCompleter
			connEnsurer
			describingHolder
			describedWriter
			lazyCommitter
			partitionOpener
			columnsHolder
			columnsVersioner
		}{d, w.together, w.denier, w.completer, w.ensurer, w.heldDescribed, w.writerFor, w.lazy, w.opener, w.holder, w.versioner}
	case mariadbWays:
		out = struct {
			sink.Driver
			migrate.Together
			sink.Denier
			partitionCompleter
			describedWriter
			columnsHolder
			columnsVersioner
		}{d, w.together, w.denier, w.completer, w.writerFor, w.holder, w.versioner}
	case sqliteWays:
		out = struct {
			sink.Driver
			traits
		}{d, w.traits}
	default:
		t.Fatalf("no wrapper for a driver with these ways (together, denier, traits, completer, ensurer, describing holder, writer for a describe, lazy commits, partition opener, columns holder, columns versions): %v", w.has())
	}
	if got := waysOf(out).has(); got != w.has() {
		t.Fatalf("the wrapper has the ways %v, want %v", got, w.has())
	}
	return out
}

// TestWithWaysOfEveryDriver: a wrapper of each driver the pipeline knows
// claims exactly the driver's ways.
func TestWithWaysOfEveryDriver(t *testing.T) {
	for _, d := range Drivers() {
		w := withWays(t, struct{ sink.Driver }{d}, waysOf(d))
		if got, want := waysOf(w).has(), waysOf(d).has(); got != want {
			t.Errorf("%T: the wrapper has the ways %v, want %v", d, got, want)
		}
	}
}
