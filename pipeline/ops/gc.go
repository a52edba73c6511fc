package ops

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/sink"
)

// GCReport says what GC removed, or would remove with DryRun.
type GCReport struct {
	Cutoff         time.Time `json:"cutoff"`
	Operations     int       `json:"operations"`      // completed operations whose detail was dropped
	Partitions     int64     `json:"partitions"`      // per-partition rows deleted
	Plans          int64     `json:"plans"`           // stored plans deleted
	RejectPayloads int64     `json:"reject_payloads"` // rejects whose raw value and row were cleared
	Retired        int64     `json:"retired"`         // undone and abandoned operations moved to history
	Events         int64     `json:"events"`          // outbox events delivered (or owed to no sink) before the cutoff, deleted
	// Dropped names the staging (--atomic) and key (--snapshot) tables of
	// operations that will never complete (undone, abandoned, refused or
	// superseded), which GC drops whatever their age.
	Dropped []string `json:"dropped_tables,omitempty"`
	DryRun  bool     `json:"dry_run"`
}

// GC drops the bulky data of operations completed before now - olderThan:
// their stored plans, per-partition rows, and the raw values and rows of
// their rejects. It keeps the identity evidence: operations (key,
// fingerprint, state, counts, stored outcome), attempts, and the rejects'
// ordinals and reasons, so duplicate detection and history keep working.
// Undone and abandoned operations older than the window move to the past
// operations, out of status and into history. Other operations that are
// not completed are never touched. Outbox events recorded before the
// cutoff whose every delivery was made before it (or that are owed to no
// sink) are deleted; events still pending or refused by a sink are kept.
func (o *Operator) GC(ctx context.Context, olderThan time.Duration, dryRun bool) (*GCReport, error) {
	if err := o.st.Present(); err != nil {
		return nil, err
	}
	rep := &GCReport{Cutoff: time.Now().Add(-olderThan).UTC(), DryRun: dryRun}
	ops, err := o.st.Ledger.List(ctx, ledger.Filter{State: ledger.Completed})
	if err != nil {
		return nil, err
	}
	tx, err := store.BeginTx(ctx, o.st.DB)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := o.gcCompleted(ctx, tx.Tx, ops, rep); err != nil {
		return nil, err
	}
	if err := o.retireEnded(ctx, tx.Tx, rep); err != nil {
		return nil, err
	}
	if rep.Events, err = o.st.Ledger.PruneEvents(ctx, tx.Tx, rep.Cutoff.UnixMilli()); err != nil {
		return nil, err
	}
	if rep.Dropped, err = o.dropOrphans(ctx, tx.Tx); err != nil {
		return nil, err
	}
	if dryRun {
		return rep, nil // the deferred rollback undoes it all
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit gc: %w", err)
	}
	return rep, nil
}

// gcCompleted drops, inside tx, the stored plans, per-partition rows and
// reject payloads of the operations ops completed before rep's cutoff,
// counting them in rep.
func (o *Operator) gcCompleted(ctx context.Context, tx *sql.Tx, ops []ledger.Operation, rep *GCReport) error {
	for _, op := range ops {
		if op.CompletedAt >= rep.Cutoff.UnixMilli() {
			continue
		}
		k := checkpoint.Op{Table: op.Table, FileID: op.FileID}
		plans, parts, err := o.st.CP.Drop(ctx, tx, k)
		if err != nil {
			return err
		}
		payloads, err := o.st.Ledger.DropRejectPayloads(ctx, tx, op.Key)
		if err != nil {
			return err
		}
		if plans+parts+payloads > 0 {
			rep.Operations++
		}
		rep.Plans += plans
		rep.Partitions += parts
		rep.RejectPayloads += payloads
	}
	return nil
}

// retireEnded moves, inside tx, the undone and abandoned operations last
// changed before rep's cutoff to the past operations, counting them in rep.
func (o *Operator) retireEnded(ctx context.Context, tx *sql.Tx, rep *GCReport) error {
	// Undone and abandoned operations are resolved: past the window they
	// leave status for history (their detail went when they ended).
	for _, state := range []ledger.State{ledger.Undone, ledger.Abandoned} {
		ended, err := o.st.Ledger.List(ctx, ledger.Filter{State: state})
		if err != nil {
			return err
		}
		for _, op := range ended {
			if op.UpdatedAt >= rep.Cutoff.UnixMilli() {
				continue
			}
			if err := o.st.Ledger.Replace(ctx, tx, op.Key, ""); err != nil {
				return err
			}
			rep.Retired++
		}
	}
	return nil
}

// dropOrphans drops, inside tx, the staging and key tables of this
// ledger's operations that are not processing or failed (and so will never
// complete and drop them itself), and returns their names. Tables of
// operations this ledger does not have are left alone: where the database
// has schemas they may belong to another ledger (another state schema)
// importing the same file into a table of the same name elsewhere.
func (o *Operator) dropOrphans(ctx context.Context, tx *sql.Tx) ([]string, error) {
	current, err := o.st.Driver.CurrentSchema(ctx, tx)
	if err != nil {
		return nil, err
	}
	mine, live, err := o.ownTables(ctx, current)
	if err != nil {
		return nil, err
	}
	listed, err := o.workTablesListed(ctx, tx)
	if err != nil {
		return nil, err
	}
	var drop []string
	for _, l := range listed {
		if mine[l.tableName] && !live[l.tableName] {
			drop = append(drop, l.name)
		}
	}
	for _, name := range drop {
		if err := o.st.Driver.DropTable(ctx, tx, name); err != nil {
			return nil, fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return drop, nil
}

// ownTables returns the staging and key tables of this ledger's
// operations (mine), and those of the ones still processing or failed
// (live), as workTables names them.
func (o *Operator) ownTables(ctx context.Context, current string) (mine, live map[tableName]bool, err error) {
	ops, err := o.st.Ledger.List(ctx, ledger.Filter{})
	if err != nil {
		return nil, nil, err
	}
	mine, live = map[tableName]bool{}, map[tableName]bool{}
	for _, op := range ops {
		for _, name := range o.workTables(current, op) {
			mine[name] = true
			if op.State == ledger.Processing || op.State == ledger.Failed {
				live[name] = true
			}
		}
	}
	return mine, live, nil
}

// tableName is a table's schema ("" where the database has none) and
// name, unquoted: two tables are one when both parts are equal.
type tableName struct{ schema, table string }

// workTables names the staging and key tables of op: beside the target
// where the database has schemas (in current when the target's name is
// unqualified).
func (o *Operator) workTables(current string, op ledger.Operation) [2]tableName {
	h := strconv.FormatUint(uint64(pipeline.FileKey(op.Table+"\x00"+op.FileID)), 16)
	schema := current
	if s, _, err := o.st.Driver.Limits().SplitTable(op.Table); err == nil && s != "" {
		schema = s
	}
	return [2]tableName{{schema, sink.StagePrefix + h}, {schema, "_idemport_seen_" + h}}
}

// listedTable is a table the driver's Tables listed: its name as listed
// (and as the driver reads it) and its parts.
type listedTable struct {
	name string
	tableName
}

// workTablesListed returns the tables of the database whose names begin
// as staging and key tables do, each with its parts; a listed name the
// driver would not read as one table is no table of ours, and is left out.
func (o *Operator) workTablesListed(ctx context.Context, tx *sql.Tx) ([]listedTable, error) {
	names, err := o.st.Driver.Tables(ctx, tx, sink.StagePrefix, "_idemport_seen_")
	if err != nil {
		return nil, fmt.Errorf("list staging tables: %w", err)
	}
	var out []listedTable
	for _, name := range names {
		if schema, table, err := o.st.Driver.Limits().SplitTable(name); err == nil {
			out = append(out, listedTable{name, tableName{schema, table}})
		}
	}
	return out, nil
}
