package pipeline

import (
	"strconv"
	"time"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/sink"
)

// tables names the tables an import uses beside its target, and the time
// its snapshot is as of. They follow from the request, the target, the
// identity and the claim, so the run computes them once, after its claim
// (newTables), and its plan stage and its applier read the same value.
type tables struct {
	// stage names the staging table of an --atomic operation: the
	// target's columns and key, beside it. Partitions are written into it
	// with their checkpoints; the completing transaction moves its rows
	// into the target and drops it.
	stage string
	// seen names the table that holds the keys a natural-key snapshot
	// file had, one per operation, beside the target table (in its schema
	// on PostgreSQL). It lives from the plan to the completing
	// transaction. With --atomic it is the staging table, which holds
	// every key of the file.
	seen string
	// write is where partitions write: the target, or with --atomic its
	// staging table.
	write sink.Target
	// keysSeen reports whether the run records the keys its file has:
	// for a snapshot's sweep, or a replacement's (sweepReplaced).
	keysSeen bool
	// asOf is the time the snapshot's data is as of, in Unix
	// milliseconds: --as-of, or the file's modification time.
	asOf int64
}

// newTables returns the tables of the import of req into target under
// ident, as claimed by c, named as a database of limits l reads names.
func newTables(req Request, target sink.Target, ident identity, c claimed, l sink.Limits) tables {
	t := tables{stage: beside(sink.StagePrefix, ident.id, target, l), write: target, asOf: asOf(req.AsOf, ident.stat)}
	if req.Mapping.Atomic {
		t.seen = t.stage
		t.write.Table = t.stage
	} else {
		t.seen = beside("_idemport_seen_", ident.id, target, l)
	}
	t.keysSeen = (req.Mapping.Snapshot != nil || c.replacing()) && !target.Ordinal() && !req.Mapping.Atomic
	return t
}

// asOf is the time a snapshot's data is as of, in Unix milliseconds: at
// (--as-of), or the modification time of the file stat describes.
func asOf(at time.Time, stat ledger.FileStat) int64 {
	if !at.IsZero() {
		return at.UnixMilli()
	}
	return stat.MtimeNs / int64(time.Millisecond)
}

// beside names a table of the operation of id, prefix and the operation's
// hash, beside the target table (in its schema, where table names are
// qualified: read and written as the driver reads them, l.SplitTable).
func beside(prefix string, id ledger.Identity, target sink.Target, l sink.Limits) string {
	name := prefix + strconv.FormatUint(uint64(FileKey(id.Table+"\x00"+id.FileID)), 16)
	schema, _, err := l.SplitTable(target.Table)
	if err != nil { // refused before the import named its tables (identify)
		return name
	}
	return l.JoinTable(schema, name)
}
