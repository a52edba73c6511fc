package pipeline

import (
	"github.com/idemport/idemport/ledger"
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
