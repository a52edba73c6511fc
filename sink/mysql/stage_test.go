package mysql

import (
	"reflect"
	"testing"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/sink"
	"github.com/idemport/idemport/sink/drivertest"
)

// TestConstrainStage: the staging table takes, under their names, the
// target's CHECKs (of a column and of the table, over a column whose name
// holds a quote, a string holding quotes) over columns it holds with the
// same type and collation, not one over a column of another type, nor one
// whose clause the server writes with a backslash (a string's quote); and
// NOT NULL, its columns' kinds kept (a decimal's comment, JSON's own
// check). Run again, it changes nothing. The stage then refuses what the
// target refuses, by the target's reasons.
func TestConstrainStage(t *testing.T) {
	db, _ := openTarget(t, sink.Settings{})
	f := drivertest.Open(t, drivertest.Env{DB: db, Driver: Driver{}})
	f.Exec(`CREATE TABLE t (id bigint PRIMARY KEY, qty bigint CHECK (qty >= 0), code varchar(20), doc longtext CHECK (json_valid(doc)),
		amount mediumtext NOT NULL COMMENT 'idemport:decimal', note longtext NOT NULL, "we""ird" bigint,
		CONSTRAINT both_ok CHECK (qty < "we""ird" OR note <> 'say "x" ` + "`y`" + `'),
		CONSTRAINT code_ok CHECK (code <> 'x'), CONSTRAINT slash CHECK (note <> 'a\b'), CONSTRAINT quote CHECK (note <> 'it''s'),
		_idemport_file bigint, _idemport_row bigint) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin`)
	stage := sink.StagePrefix + "t"
	f.MustEnsure(sink.Target{Table: stage, Key: []string{"id"}}, drivertest.Schema(drivertest.I64("id"), drivertest.I64("qty"), drivertest.Str("code"),
		drivertest.JSON("doc"), drivertest.Dec("amount"), drivertest.Str("note"), drivertest.I64(`we"ird`)))
	for range 2 {
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Driver{}).ConstrainStage(t.Context(), tx, "t", stage); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		checks := drivertest.Strings(t, db, `SELECT constraint_name FROM information_schema.check_constraints
			WHERE constraint_schema = DATABASE() AND table_name = ? ORDER BY constraint_name`, stage)
		if want := []string{"both_ok", "doc", "qty"}; !reflect.DeepEqual(checks, want) {
			t.Fatalf("the stage's CHECKs: %v, want %v", checks, want)
		}
		tb, err := Driver{}.Describe(t.Context(), db, stage)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name    string
			kind    idemtype.Type
			notNull bool
		}{{"qty", idemtype.Int64, false}, {"code", idemtype.String, false}, {"doc", idemtype.JSON, false}, {"amount", idemtype.Decimal, true}, {"note", idemtype.String, true}} {
			if got := tb.Column(c.name); got == nil || got.Kind != c.kind || got.NotNull != c.notNull {
				t.Fatalf("stage column %s: %+v, want kind %s, NOT NULL %v", c.name, got, c.kind, c.notNull)
			}
		}
	}
	for _, c := range []struct {
		values string
		code   uint16
	}{
		{`(1, -1, 'a', '{}', '1', 'n', 5)`, 4025},                    // qty
		{`(1, 6, 'a', '{}', '1', 'say "x" ` + "`y`" + `', 5)`, 4025}, // both_ok
		{`(1, 1, 'a', 'not json', '1', 'n', 5)`, 4025},               // doc
		{`(1, 1, 'a', '{}', '1', NULL, 5)`, 1048},                    // note
		{`(1, 1, 'a', '{}', NULL, 'n', 5)`, 1048},                    // amount
		{`(1, 1, 'x', '{}', '1', 'a\b', 5)`, 0},                      // code_ok and slash are the move's
		{`(2, 1, 'a', '{}', '1', 'it''s', 5)`, 0},                    // and so is quote, which the server writes with a backslash
	} {
		_, err := db.ExecContext(t.Context(), `INSERT INTO `+q(stage)+` (id, qty, code, doc, amount, note, "we""ird") VALUES `+c.values)
		if number(err) != c.code || (c.code == 0) != (err == nil) {
			t.Fatalf("%s: %v, want error %d", c.values, err, c.code)
		}
	}
}

func TestCheckColumns(t *testing.T) {
	for _, c := range []struct {
		clause string
		cols   []string
		ok     bool
	}{
		{`"qty" >= 0`, []string{"qty"}, true},
		{"`a` < \"b\"\"c\" and `a` <> 'x\"`y''z'", []string{"a", `b"c`}, true},
		{`json_valid("doc")`, []string{"doc"}, true},
		{`1 = 1`, nil, true},
		{`"a" <> 'x\'y'`, nil, false},
		{`"a" <> 'x`, nil, false},
	} {
		cols, ok := checkColumns(c.clause)
		if !reflect.DeepEqual(cols, c.cols) || ok != c.ok {
			t.Errorf("checkColumns(%s) = %q, %v; want %q, %v", c.clause, cols, ok, c.cols, c.ok)
		}
	}
}
