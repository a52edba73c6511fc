package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

const (
	mappingV1 = `{"mapping_version":1,"table":"orders","key":["id"],"version_column":"","columns":{},"format":"csv","delimiter":",","quotes":false}`
	// mappingV2 differs from mappingV1 in key and version_column.
	mappingV2 = `{"mapping_version":1,"table":"orders","key":["id","sku"],"version_column":"v","columns":{},"format":"csv","delimiter":",","quotes":false}`
)

func identity() Identity {
	return Identity{
		Key:           Key{Table: "orders", FileID: "file-1"},
		FileKey:       42,
		ContentDigest: digest("content"),
		MappingDigest: digest(mappingV1),
		Mapping:       mappingV1,
		Path:          "/data/orders.csv",
		Size:          1234,
	}
}

// stored returns the operation a run with identity() would have left.
func stored(state State, planned bool, leaseAttempt string, leaseExpires int64) *Operation {
	id := identity()
	return &Operation{
		Key:           id.Key,
		FileKey:       id.FileKey,
		State:         state,
		ContentDigest: id.ContentDigest,
		MappingDigest: id.MappingDigest,
		Mapping:       id.Mapping,
		Path:          id.Path,
		Size:          id.Size,
		Planned:       planned,
		LeaseAttempt:  leaseAttempt,
		LeaseExpires:  leaseExpires,
	}
}

func TestDecide(t *testing.T) {
	const now = int64(1_700_000_000_000)
	id := identity()
	otherContent := id
	otherContent.ContentDigest = digest("other content")
	otherMapping := id
	otherMapping.Mapping, otherMapping.MappingDigest = mappingV2, digest(mappingV2)
	otherBoth := otherMapping
	otherBoth.ContentDigest = otherContent.ContentDigest

	type row struct {
		name string
		s    Situation
		want Decision
		from string
	}
	at := func(op *Operation, id Identity) Situation { return Situation{Op: op, ID: id, Now: now} }
	with := func(s Situation, f func(*Situation)) Situation { f(&s); return s }
	rows := []row{
		{"no operation", at(nil, id), Create, ""},

		{"processing, planned, a partition free", with(at(stored(Processing, true, "", 0), id), func(s *Situation) { s.Claimable, s.Held = 1, 2 }), Resume, ""},
		{"processing, planned, nothing held", at(stored(Processing, true, "", 0), id), Resume, ""},
		{"processing, planned, stray lease", at(stored(Processing, true, "a1", now+60_000), id), Resume, ""},
		{"processing, planned, every unfinished partition held", with(at(stored(Processing, true, "", 0), id), func(s *Situation) { s.Held = 2 }), Busy, ""},

		{"processing, not planned, lease live", at(stored(Processing, false, "a1", now+60_000), id), Busy, ""},
		{"processing, not planned, lease live for 1ms", at(stored(Processing, false, "a1", now+1), id), Busy, ""},
		{"processing, not planned, lease expires now", at(stored(Processing, false, "a1", now), id), Plan, "a1"},
		{"processing, not planned, lease expired", at(stored(Processing, false, "a1", now-1), id), Plan, "a1"},
		{"processing, not planned, lease expired at once", at(stored(Processing, false, "a1", 0), id), Plan, "a1"},
		{"processing, not planned, no lease", at(stored(Processing, false, "", 0), id), Plan, ""},
		{"processing, not planned, lease live, its holder gone", with(at(stored(Processing, false, "a1", now+60_000), id), func(s *Situation) { s.Gone = []string{"a1"} }), Plan, "a1"},
		{"processing, not planned, lease live, another holder gone", with(at(stored(Processing, false, "a1", now+60_000), id), func(s *Situation) { s.Gone = []string{"a2"} }), Busy, ""},

		{"failed, planned", at(stored(Failed, true, "", 0), id), Resume, ""},
		{"failed, planned, every unfinished partition held", with(at(stored(Failed, true, "", 0), id), func(s *Situation) { s.Held = 1 }), Busy, ""},
		{"failed, not planned", at(stored(Failed, false, "", 0), id), Plan, ""},

		{"completed", at(stored(Completed, true, "", 0), id), Duplicate, ""},
		{"completed, table missing", with(at(stored(Completed, true, "", 0), id), func(s *Situation) { s.TableMissing = true }), Reapply, ""},
		{"completed, --reapply", with(at(stored(Completed, true, "", 0), id), func(s *Situation) { s.Reapply = true }), Reapply, ""},
		{"refused", at(stored(Refused, false, "", 0), id), Refuse, ""},
		// An older snapshot than the last applied writes nothing, unless
		// a completed operation of it decides.
		{"no operation, stale snapshot", with(at(nil, id), func(s *Situation) { s.Stale = true }), Stale, ""},
		{"processing, stale snapshot", with(at(stored(Processing, false, "a1", now+60_000), id), func(s *Situation) { s.Stale = true }), Stale, ""},
		{"failed, stale snapshot", with(at(stored(Failed, true, "", 0), otherContent), func(s *Situation) { s.Stale = true }), Stale, ""},
		{"undone, stale snapshot", with(at(stored(Undone, true, "", 0), id), func(s *Situation) { s.Stale = true }), Stale, ""},
		{"completed, stale snapshot", with(at(stored(Completed, true, "", 0), id), func(s *Situation) { s.Stale = true }), Duplicate, ""},
		{"completed, stale snapshot, --reapply", with(at(stored(Completed, true, "", 0), id), func(s *Situation) { s.Stale, s.Reapply = true, true }), Stale, ""},
		{"completed, stale snapshot, table gone", with(at(stored(Completed, true, "", 0), id), func(s *Situation) { s.Stale, s.TableMissing = true, true }), Stale, ""},
		{"completed, stale snapshot, other content", with(at(stored(Completed, true, "", 0), otherContent), func(s *Situation) { s.Stale = true }), Conflict, ""},
		{"refused, limit now admits", with(at(stored(Refused, false, "", 0), id), func(s *Situation) { s.Admits = true }), Plan, ""},

		// A different fingerprint: an operation without effect is
		// superseded, one with effects is a conflict.
		{"refused, other content", at(stored(Refused, false, "", 0), otherContent), Supersede, ""},
		{"refused, other mapping", at(stored(Refused, false, "", 0), otherMapping), Supersede, ""},
		{"failed before any commit, other mapping", at(stored(Failed, true, "", 0), otherMapping), Supersede, ""},
		{"failed before planning, other content", at(stored(Failed, false, "", 0), otherContent), Supersede, ""},
		{"failed after a commit, other mapping", with(at(stored(Failed, true, "", 0), otherMapping), func(s *Situation) { s.Effect = true }), Conflict, ""},
		{"completed, table missing, other content", with(at(stored(Completed, true, "", 0), otherContent), func(s *Situation) { s.TableMissing = true }), Conflict, ""},

		// --replace: a completed operation with other content (the same
		// mapping) is replaced; anything else decides as without it.
		{"completed, other content, --replace", with(at(stored(Completed, true, "", 0), otherContent), func(s *Situation) { s.Replace = true }), Replace, ""},
		{"completed, other mapping, --replace", with(at(stored(Completed, true, "", 0), otherMapping), func(s *Situation) { s.Replace = true }), Conflict, ""},
		{"completed, other content and mapping, --replace", with(at(stored(Completed, true, "", 0), otherBoth), func(s *Situation) { s.Replace = true }), Conflict, ""},
		{"completed, same fingerprint, --replace", with(at(stored(Completed, true, "", 0), id), func(s *Situation) { s.Replace = true }), Duplicate, ""},
		{"completed, other content, --replace, stale snapshot", with(at(stored(Completed, true, "", 0), otherContent), func(s *Situation) { s.Replace, s.Stale = true, true }), Stale, ""},
		{"processing, other content, --replace", with(at(stored(Processing, true, "", 0), otherContent), func(s *Situation) { s.Replace, s.Effect = true, true }), Conflict, ""},
		{"failed after a commit, other content, --replace", with(at(stored(Failed, true, "", 0), otherContent), func(s *Situation) { s.Replace, s.Effect = true, true }), Conflict, ""},
		{"refused, other content, --replace", with(at(stored(Refused, false, "", 0), otherContent), func(s *Situation) { s.Replace = true }), Supersede, ""},
		{"undone, other content, --replace", with(at(stored(Undone, true, "", 0), otherContent), func(s *Situation) { s.Replace = true }), Create, ""},
	}
	// Undone and abandoned operations are as if never imported.
	for _, state := range []State{Undone, Abandoned} {
		for name, other := range map[string]Identity{"same": id, "other content": otherContent, "other mapping": otherMapping} {
			rows = append(rows, row{fmt.Sprintf("%s, %s fingerprint", state, name), at(stored(state, true, "", 0), other), Create, ""})
		}
	}
	// Otherwise a different fingerprint is a conflict.
	for _, state := range []State{Processing, Completed} {
		for _, planned := range []bool{false, true} {
			for _, lease := range []int64{0, now + 60_000} {
				for name, other := range map[string]Identity{"content": otherContent, "mapping": otherMapping, "both": otherBoth} {
					rows = append(rows, row{
						fmt.Sprintf("%s, planned %v, lease %d, different %s", state, planned, lease, name),
						at(stored(state, planned, "a1", lease), other), Conflict, ""})
				}
			}
		}
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			d, from := Decide(r.s)
			if d != r.want || from != r.from {
				t.Errorf("Decide = %s, %q; want %s, %q", d, from, r.want, r.from)
			}
		})
	}
}

func TestDecisionNames(t *testing.T) {
	want := map[Decision]string{Create: "create", Plan: "plan", Resume: "resume", Duplicate: "duplicate",
		Refuse: "refuse", Conflict: "conflict", Busy: "busy", Supersede: "supersede", Reapply: "reapply", Stale: "stale", Replace: "replace"}
	for d, w := range want {
		if d.String() != w {
			t.Errorf("%d is %q, want %q", int(d), d.String(), w)
		}
	}
}

func TestDifference(t *testing.T) {
	op := stored(Completed, true, "", 0)
	id := identity()
	storedShort := id.ContentDigest[:len("sha256:")+12]

	content := id
	content.ContentDigest = digest("other content")
	contentShort := content.ContentDigest[:len("sha256:")+12]

	mapping := id
	mapping.Mapping, mapping.MappingDigest = mappingV2, digest(mappingV2)

	both := mapping
	both.ContentDigest = content.ContentDigest

	columns := id
	columns.Mapping = `{"mapping_version":1,"table":"orders","key":["id"],"version_column":"","columns":{"id":"string"},"format":"csv","delimiter":",","quotes":false}`
	columns.MappingDigest = digest(columns.Mapping)

	dropped := id
	dropped.Mapping = `{"mapping_version":1,"table":"orders","key":["id"],"columns":{},"format":"csv","delimiter":",","quotes":true}`
	dropped.MappingDigest = digest(dropped.Mapping)

	sameDoc := id
	sameDoc.MappingDigest = digest("another mapping version")

	garbled := stored(Completed, true, "", 0)
	garbled.Mapping = `not json`

	cases := []struct {
		name      string
		op        *Operation
		id        Identity
		what, how string
	}{
		{"content", op, content, "content",
			fmt.Sprintf("stored %s, this file %s", storedShort, contentShort)},
		{"mapping", op, mapping, "mapping",
			`key was ["id"], now ["id","sku"], version_column was "", now "v"`},
		{"content and mapping", op, both, "content and mapping",
			fmt.Sprintf(`stored %s, this file %s; key was ["id"], now ["id","sku"], version_column was "", now "v"`, storedShort, contentShort)},
		{"mapping columns", op, columns, "mapping", `columns was {}, now {"id":"string"}`},
		{"mapping field dropped", op, dropped, "mapping", `quotes was false, now true, version_column was "", now unset`},
		{"same document, other digest", op, sameDoc, "mapping", "mapping versions differ"},
		{"stored mapping garbled", garbled, mapping, "mapping", "stored mapping cannot be compared"},
		{"no difference", op, id, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			what, how := Difference(c.op, c.id)
			if what != c.what || how != c.how {
				t.Errorf("Difference =\n\t%q, %q\nwant\n\t%q, %q", what, how, c.what, c.how)
			}
		})
	}
}
