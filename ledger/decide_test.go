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
		op   *Operation
		id   Identity
		want Decision
		from string
	}
	rows := []row{
		{"no operation", nil, id, Create, ""},

		{"processing, planned", stored(Processing, true, "", 0), id, Resume, ""},
		{"processing, planned, stray lease", stored(Processing, true, "a1", now+60_000), id, Resume, ""},

		{"processing, not planned, lease live", stored(Processing, false, "a1", now+60_000), id, Busy, ""},
		{"processing, not planned, lease live for 1ms", stored(Processing, false, "a1", now+1), id, Busy, ""},
		{"processing, not planned, lease expires now", stored(Processing, false, "a1", now), id, Plan, "a1"},
		{"processing, not planned, lease expired", stored(Processing, false, "a1", now-1), id, Plan, "a1"},
		{"processing, not planned, lease expired at once", stored(Processing, false, "a1", 0), id, Plan, "a1"},
		{"processing, not planned, no lease", stored(Processing, false, "", 0), id, Plan, ""},

		{"failed, planned", stored(Failed, true, "", 0), id, Resume, ""},
		{"failed, not planned", stored(Failed, false, "", 0), id, Plan, ""},

		{"completed", stored(Completed, true, "", 0), id, Duplicate, ""},
		{"refused", stored(Refused, false, "", 0), id, Refuse, ""},
	}
	// A different fingerprint is a conflict whatever the stored state.
	for _, state := range []State{Processing, Failed, Completed, Refused} {
		for _, planned := range []bool{false, true} {
			for _, lease := range []int64{0, now + 60_000} {
				for name, other := range map[string]Identity{"content": otherContent, "mapping": otherMapping, "both": otherBoth} {
					rows = append(rows, row{
						fmt.Sprintf("%s, planned %v, lease %d, different %s", state, planned, lease, name),
						stored(state, planned, "a1", lease), other, Conflict, ""})
				}
			}
		}
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			d, from := Decide(r.op, r.id, now)
			if d != r.want || from != r.from {
				t.Errorf("Decide = %s, %q; want %s, %q", d, from, r.want, r.from)
			}
		})
	}
}

func TestDecisionNames(t *testing.T) {
	want := map[Decision]string{Create: "create", Plan: "plan", Resume: "resume", Duplicate: "duplicate",
		Refuse: "refuse", Conflict: "conflict", Busy: "busy"}
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
