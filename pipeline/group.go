package pipeline

import (
	"sync"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
)

// A partition group is a run of partitions one worker commits in one
// transaction. On SQLite a commit writes every page it changed to the log
// and the checkpoint copies each to the database again: rows in random
// key order change a random leaf each, so once the table has more leaves
// than a partition has rows, each partition's commit rewrites nearly
// every leaf of the table, and the writes grow with the square of the
// file (10M rows of shuffled integer keys in partitions of 100,000:
// 92 GB written for a 714 MB database, 1.5 times as long as sqlite3's
// .import into a table keyed alike). Where the driver says so
// (sink.Database.GroupCommits), a partition whose keys came out of order
// (keyOrder.broken) therefore leaves its transaction open, and the next
// partition fences its claim, claims the one after, writes and marks
// itself done in it, until the group closes (grows): its rows reach the
// rows of the operation's partitions done when it began (applying.
// doneRows), so that groups double and each page is written a bounded
// number of times per row; its time would pass groupTime; or no partition
// is left to claim. Then the group commits at once: every partition's
// rows, done mark and counts, or none. Only then are its partitions
// counted for the result and reported (committedPartition), and the
// after-partition-commit failpoint passed once for each.
//
// A group rolls back whole: a kill, a failure or a retried round
// (deadlock, rows read again, lost connection) leaves none of its
// partitions done, their claims made inside it undone, and the next round
// or run applies them again. A failpoint counted per partition
// (inside-partition, before-partition-commit) is passed by every
// partition of a group; before-partition-commit of all but the last is
// followed by the next partition's writes, not the COMMIT.
//
// Partitions in key order (a file sorted by its key, and ordinal mode)
// never group: each writes its own leaves, and a longer transaction would
// only hold the write lock longer.

// group is the partitions a worker's open transaction marked done and has
// not committed yet (partitionTx.group), with what decides whether the
// next partition joins them.
type group struct {
	done  []groupMember
	began time.Time // when its transaction began
	base  int64     // the rows of the operation's partitions done then (applying.doneRows)
	rows  int64     // the rows of its partitions
}

// groupMember is a partition a group's transaction marked done, with what
// the attempt counts for it once the transaction commits.
type groupMember struct {
	claim   *checkpoint.Claim
	counts  idemtype.Rows
	evolved *evolution
}

// startGroup returns the group of a transaction that begins now.
func (a *applier) startGroup(mu *sync.Mutex) group {
	mu.Lock()
	defer mu.Unlock()
	return group{began: time.Now(), base: a.ap.doneRows}
}

// grows says whether the transaction of p, whose partition was just
// marked done, stays open for the next partition: the driver groups
// commits, p's keys came out of order (shuffled), a partition is left,
// and the group's rows are fewer than the rows done when it began and it
// has time for one partition more (groupTime).
func (a *applier) grows(p *partitionTx, shuffled bool) bool {
	g := &p.group
	if !a.e.st.GroupCommits || !shuffled || p.last || g.rows >= g.base {
		return false
	}
	spent := time.Since(g.began)
	each := spent / time.Duration(len(g.done))
	return spent+each <= groupTime(a.req.Lease, a.e.st.BusyTimeout)
}

// groupTime bounds how long a group's transaction stays open, lease being
// the attempt's lease and busy the database's --busy-timeout: on SQLite
// it holds the database's write lock, which other imports wait for (at
// most busy) and this attempt's heartbeat too (its leases run out
// unrenewed after lease), as an overlap's does (overlapTime).
func groupTime(lease, busy time.Duration) time.Duration {
	return min(lease/4, busy/4, 10*time.Second)
}

// shuffled says whether the partition's rows came out of key order: true
// from the first batch that broke it (keyOrder.broken).
func (k *keyOrder) shuffled() bool {
	return k != nil && k.broken
}
