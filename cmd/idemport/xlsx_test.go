package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/idemport/idemport/internal/testkit"
)

// writeWorkbook writes a workbook whose second sheet, "Orders", has a
// title row, a header, and rows of numbers (integers, decimals as Excel
// stores them), text (one that looks like a number), dates, date-times,
// booleans and empty cells; its first sheet is a cover that is not data.
func writeWorkbook(t *testing.T, path string, rows int) {
	t.Helper()
	x := excelize.NewFile()
	defer x.Close()
	x.SetCellValue("Sheet1", "A1", "cover sheet")
	if _, err := x.NewSheet("Orders"); err != nil {
		t.Fatal(err)
	}
	dateStyle, _ := x.NewStyle(&excelize.Style{NumFmt: 14})
	custom := "yyyy-mm-dd hh:mm:ss"
	stampStyle, _ := x.NewStyle(&excelize.Style{CustomNumFmt: &custom})
	set := func(cell string, v any) {
		if err := x.SetCellValue("Orders", cell, v); err != nil {
			t.Fatal(err)
		}
	}
	set("A1", "Orders export, December")
	for i, h := range []string{"id", "amount", "code", "day", "at", "paid", "note"} {
		cell, _ := excelize.CoordinatesToCellName(i+1, 3)
		set(cell, h)
	}
	for i := 1; i <= rows; i++ {
		r := i + 3
		cell := func(c int) string { s, _ := excelize.CoordinatesToCellName(c, r); return s }
		set(cell(1), i)
		set(cell(2), float64(i)+0.1)
		set(cell(3), "0"+strings.Repeat("7", i%3+1))
		set(cell(4), time.Date(2024, 1, i, 0, 0, 0, 0, time.UTC))
		x.SetCellStyle("Orders", cell(4), cell(4), dateStyle)
		set(cell(5), time.Date(2024, 1, i, 13, 30, i, 0, time.UTC))
		x.SetCellStyle("Orders", cell(5), cell(5), stampStyle)
		set(cell(6), i%2 == 0)
		if i%3 != 0 {
			set(cell(7), "note "+strings.Repeat("x", i))
		}
	}
	if err := x.SaveAs(path); err != nil {
		t.Fatal(err)
	}
}

// TestExcel imports the "Orders" sheet of a workbook, its title row
// skipped: numbers as Excel stores them, text as text (a code with a
// leading zero stays text), dates as dates, date-times as timestamps,
// booleans, empty cells as NULL; value by value on both databases. The
// sheet is cut into partitions, resumed after a kill, and a rerun is a
// duplicate; another sheet is another mapping.
func TestExcel(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		writeWorkbook(t, filepath.Join(dir, "orders.xlsx"), 12)
		args := []string{"import", "--sheet", "Orders", "--skip-lines", "1", "--partition-rows", "5", "orders.xlsx"}
		run := tg.Exec(t, dir, []string{"IDEMPORT_FAILPOINT=after-partition-commit:1"}, args...)
		if run.Code == 0 {
			t.Fatalf("not killed:\n%s", run.Stdout)
		}
		res := importTo(t, tg, dir, nil, 0, args[1:]...)
		if res.Outcome != "resumed" || res.Partitions.Total != 3 || res.Rows.Inserted != 7 {
			t.Fatalf("resume: %+v", res)
		}
		want := [][]string{{"id", "amount", "code", "day", "at", "paid", "note"}}
		for i := 1; i <= 12; i++ {
			at := "2024-01-%02d 13:30:%02d"
			if !tg.IsPostgres() {
				at = "2024-01-%02dT13:30:%02d.000000"
			}
			paid := map[bool]string{true: "1", false: "0"}[i%2 == 0]
			if tg.IsPostgres() {
				paid = map[bool]string{true: "true", false: "false"}[i%2 == 0]
			}
			note := nullText
			if i%3 != 0 {
				note = "note " + strings.Repeat("x", i)
			}
			want = append(want, []string{itoa(i), itoa(i) + ".1", "0" + strings.Repeat("7", i%3+1),
				"2024-01-" + pad2(i), fmtS(at, i, i), paid, note})
		}
		checkTable(t, tg, "orders", want)
		if again := importTo(t, tg, dir, nil, 0, args[1:]...); again.Outcome != "duplicate" {
			t.Fatalf("again: %+v", again)
		}
		run = tg.Exec(t, dir, nil, "import", "--sheet", "Sheet1", "--skip-lines", "1", "--partition-rows", "5", "orders.xlsx")
		if run.Code != 3 || !strings.Contains(run.Stdout, "sheet was") {
			t.Fatalf("another sheet: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
		run = tg.Exec(t, dir, nil, "import", "--sheet", "Nope", "orders.xlsx")
		if run.Code != 2 || !strings.Contains(run.Stdout+run.Stderr, `no sheet "Nope" (it has Sheet1, Orders)`) {
			t.Fatalf("a missing sheet: exit %d\n%s%s", run.Code, run.Stdout, run.Stderr)
		}
	})
}

func itoa(i int) string                 { return strings.TrimSpace(fmtS("%d", i)) }
func pad2(i int) string                 { return fmtS("%02d", i) }
func fmtS(f string, args ...any) string { return fmt.Sprintf(f, args...) }
