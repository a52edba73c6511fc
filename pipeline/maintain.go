package pipeline

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
)

// RequestFor returns the request that verifies the file at path as op
// was imported: into op's table, under op's file ID, with the mapping op
// recorded (format options at their defaults where those give the same).
func RequestFor(op ledger.Operation, path string) (Request, error) {
	m, err := parseMapping(op.Mapping, path)
	if err != nil {
		return Request{}, err
	}
	m.Table = op.Table
	return Request{Path: path, FileID: op.FileID, Mapping: m}, nil
}

// eachBatch reads every partition of plan from f, in batches of at most
// batchRows rows, and calls fn with each batch's record, which is valid only
// during the call. It stops at fn's first error and returns it.
func eachBatch(f *reader.File, plan *reader.Plan, batchRows int, fn func(arrow.RecordBatch) error) error {
	for b, err := range f.Batches(plan, plan.Partitions, batchRows) {
		if err == nil {
			err = fn(b.Record)
			b.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
