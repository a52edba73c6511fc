package store

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/sink"
)

// Mapping is the versioned, stable form of a pipeline.Mapping that is
// hashed and stored with each operation: the JSON an operation records.
// Field order is fixed by the struct; map keys are sorted by encoding/json.
type Mapping struct {
	Version   int               `json:"mapping_version"`
	Table     string            `json:"table"`
	Key       []string          `json:"key"`
	VersionBy string            `json:"version_column"`
	Columns   map[string]string `json:"columns"`
	Format    string            `json:"format"`
	Delimiter string            `json:"delimiter"`
	Quotes    bool              `json:"quotes"`
	// Added later: omitted when unset, so that the mapping digests of
	// imports without them stay what they were.
	Snapshot *MappingSnapshot `json:"snapshot,omitempty"`
	Evolve   string           `json:"evolve,omitempty"`
	Atomic   bool             `json:"atomic,omitempty"`
	// How the file is read, when not by default.
	SkipLines int               `json:"skip_lines,omitempty"`
	NoHeader  bool              `json:"no_header,omitempty"`
	Names     []string          `json:"names,omitempty"`
	Select    []string          `json:"select,omitempty"`
	Rename    map[string]string `json:"rename,omitempty"`
	Null      []string          `json:"null,omitempty"`
	Encoding  string            `json:"encoding,omitempty"`
	Sheet     string            `json:"sheet,omitempty"`
}

// MappingSnapshot is the --snapshot part of a Mapping.
type MappingSnapshot struct {
	Delete string `json:"delete"` // hard or soft
	Scope  string `json:"scope"`
}

// Plan is the body of a stored plan: what a later attempt needs,
// beside the partitions, to read the file exactly as the planner did.
type Plan struct {
	Version       int           `json:"plan_version"`
	Schema        reader.Schema `json:"schema"`
	Rows          int64         `json:"rows"`
	Rejected      int64         `json:"rejected"`
	Superseded    int64         `json:"superseded,omitempty"`
	PartitionRows int64         `json:"partition_rows"`
	// Loose is reader.Plan.Loose: the file holds keys a table's collation
	// may compare as one.
	Loose bool `json:"loose,omitempty"`
	// PartitionBytes is 0 in plans stored before partitions were bounded
	// by bytes; their partitions are resumed as stored all the same.
	PartitionBytes int64 `json:"partition_bytes,omitempty"`
	// GrowTo is set when the partitions grew from PartitionRows rows to
	// GrowTo (reader.ScanOptions.GrowTo).
	GrowTo int64 `json:"grow_to,omitempty"`
	// Limits and JSONB are what the plan pass checked values against, so
	// that every attempt decides the same rows are bad.
	Limits map[string]reader.Limit `json:"limits,omitempty"`
	JSONB  bool                    `json:"jsonb,omitempty"`
}

// ParseScope returns the terms of a snapshot scope's canonical text, as
// MappingSnapshot.Scope and the ledger's snapshot records store it
// (pipeline.Snapshot.ScopeText): terms joined by '&', column and value
// path-escaped and joined by '='. The empty text is the whole table.
func ParseScope(text string) ([]sink.Term, error) {
	if text == "" {
		return nil, nil
	}
	var out []sink.Term
	for _, term := range strings.Split(text, "&") {
		col, val, ok := strings.Cut(term, "=")
		if !ok {
			return nil, fmt.Errorf("snapshot scope %q: term %q lacks '='", text, term)
		}
		c, err := url.PathUnescape(col)
		if err != nil {
			return nil, fmt.Errorf("snapshot scope %q: %w", text, err)
		}
		v, err := url.PathUnescape(val)
		if err != nil {
			return nil, fmt.Errorf("snapshot scope %q: %w", text, err)
		}
		out = append(out, sink.Term{Column: c, Value: v})
	}
	return out, nil
}
