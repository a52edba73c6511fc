package idemtype

// Rows counts what happened to rows. Read is every row of the partitions
// processed, bad rows included; each read row is exactly one of inserted,
// updated, unchanged, stale, superseded (a later row of the same file has
// its key, so it is not applied) or rejected.
type Rows struct {
	Read       int64 `json:"read"`
	Inserted   int64 `json:"inserted"`
	Updated    int64 `json:"updated"`
	Unchanged  int64 `json:"unchanged"`
	Stale      int64 `json:"stale"`
	Superseded int64 `json:"superseded"`
	Rejected   int64 `json:"rejected"`
}

// Add adds o to r.
func (r *Rows) Add(o Rows) {
	r.Read += o.Read
	r.Inserted += o.Inserted
	r.Updated += o.Updated
	r.Unchanged += o.Unchanged
	r.Stale += o.Stale
	r.Superseded += o.Superseded
	r.Rejected += o.Rejected
}

// Balanced reports whether every read row is accounted for exactly once.
func (r Rows) Balanced() bool {
	return r.Read == r.Inserted+r.Updated+r.Unchanged+r.Stale+r.Superseded+r.Rejected
}

// Partitions counts partitions: all of a plan, those this attempt found
// done by others (skipped) and those it committed itself.
type Partitions struct {
	Total     int64 `json:"total"`
	Skipped   int64 `json:"skipped"`
	Committed int64 `json:"committed"`
}
