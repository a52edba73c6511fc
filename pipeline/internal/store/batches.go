package store

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/idemport/idemport/reader"
)

// EachBatch reads every partition of plan from f, in batches of at most
// batchRows rows, and calls fn with each batch's record, which is valid
// only during the call. It stops at fn's first error and returns it. A
// dry run's sweep count (pipeline) and verify's key check (pipeline/ops)
// read a whole file through it.
func EachBatch(f *reader.File, plan *reader.Plan, batchRows int, fn func(arrow.RecordBatch) error) error {
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
