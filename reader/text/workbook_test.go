package text

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/value"
)

// memSource is a workbook held in memory.
type memSource struct {
	*bytes.Reader
	name string
}

func (m memSource) Name() string       { return m.name }
func (m memSource) ModTime() time.Time { return time.Time{} }
func (m memSource) Version() string    { return "" }
func (m memSource) Close() error       { return nil }
func (m memSource) Open(_ context.Context, off int64) (io.ReadCloser, error) {
	return io.NopCloser(io.NewSectionReader(m.Reader, off, m.Size()-off)), nil
}

func sheetFile(b []byte, opts input.Options) *File {
	return &File{File: &input.File{In: memSource{bytes.NewReader(b), "book.xlsx"}, Path: "book.xlsx", Format: input.XLSX, Opts: opts}}
}

// excelizeSheet is the sheet as the spreadsheet library idemport used to
// read workbooks with decodes it: the reference the workbook reader must
// match, cell by cell.
func excelizeSheet(t *testing.T, b []byte, opts input.Options) *sheet {
	t.Helper()
	x, err := excelize.OpenReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	name := opts.Sheet
	if name == "" {
		name = x.GetSheetList()[0]
	}
	raw, err := x.GetRows(name, excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatal(err)
	}
	date1904 := false
	if p, err := x.GetWorkbookProps(); err == nil && p.Date1904 != nil {
		date1904 = *p.Date1904
	}
	s := &sheet{}
	for r, row := range raw {
		cells := make([]value.Cell, len(row))
		for c, v := range row {
			if v == "" {
				cells[c] = value.Cell{Kind: value.CellNull}
				continue
			}
			ref, _ := excelize.CoordinatesToCellName(c+1, r+1)
			typ, _ := x.GetCellType(name, ref)
			switch typ {
			case excelize.CellTypeBool:
				cells[c] = value.Cell{B: []byte(map[bool]string{true: "true", false: "false"}[v == "1" || strings.EqualFold(v, "true")]), Kind: value.CellBool}
				continue
			case excelize.CellTypeSharedString, excelize.CellTypeInlineString, excelize.CellTypeError, excelize.CellTypeDate:
				cells[c] = value.Cell{B: []byte(v), Kind: value.CellString}
				continue
			}
			num, err := strconv.ParseFloat(v, 64)
			if err != nil {
				cells[c] = value.Cell{B: []byte(v), Kind: value.CellString}
				continue
			}
			style, _ := x.GetCellStyle(name, ref)
			tf := notTime
			if st, err := x.GetStyle(style); err == nil && st != nil {
				code := ""
				if st.CustomNumFmt != nil {
					code = *st.CustomNumFmt
				}
				tf = styleTimeFormat(st.NumFmt, code)
			}
			if tf != notTime {
				if t, err := excelize.ExcelDateToTime(num, date1904); err == nil && !math.IsInf(num, 0) {
					cells[c] = value.Cell{B: []byte(formatTime(t, tf)), Kind: value.CellString}
					continue
				}
			}
			cells[c] = value.Cell{B: []byte(v), Kind: value.CellText}
		}
		for _, m := range opts.Null {
			for c := range cells {
				if cells[c].Kind != value.CellNull && string(cells[c].B) == m {
					cells[c] = value.Cell{Kind: value.CellNull}
				}
			}
		}
		s.rows = append(s.rows, cells)
		s.text = append(s.text, csvText(cells))
	}
	return s
}

// zipParts writes a package of the named parts (a workbook written by
// hand, for what the library does not write).
func zipParts(t *testing.T, parts map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, parts[n])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	xmlHead   = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n"
	nsMain    = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`
	relsTypes = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
)

func handWorkbook(t *testing.T, date1904 bool, sheetData, cols string) []byte {
	pr := ""
	if date1904 {
		pr = `<workbookPr date1904="1"/>`
	}
	return zipParts(t, map[string]string{
		"[Content_Types].xml": xmlHead + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"_rels/.rels": xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="` + relsTypes + `officeDocument" Target="xl/workbook.xml"/></Relationships>`,
		"xl/workbook.xml": xmlHead + `<workbook ` + nsMain + `>` + pr + `<sheets><sheet name="Cover" sheetId="1" r:id="rId2"/><sheet name="Data" sheetId="2" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": xmlHead + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="` + relsTypes + `worksheet" Target="worksheets/data.xml"/>` +
			`<Relationship Id="rId2" Type="` + relsTypes + `worksheet" Target="/xl/worksheets/cover.xml"/>` +
			`<Relationship Id="rId3" Type="` + relsTypes + `sharedStrings" Target="sharedStrings.xml"/>` +
			`<Relationship Id="rId4" Type="` + relsTypes + `styles" Target="styles.xml"/></Relationships>`,
		"xl/sharedStrings.xml": xmlHead + `<sst ` + nsMain + ` count="4" uniqueCount="4">` +
			`<si><t>plain</t></si>` +
			`<si><r><rPr><b/></rPr><t>rich </t></r><r><t xml:space="preserve">text </t></r><rPh sb="0" eb="1"><t>phonetic</t></rPh></si>` +
			`<si><t>tab_x0009_and_x005F_x0041_ and _xD800_ and _x00e9_</t></si>` +
			`<si><t>12</t></si></sst>`,
		"xl/styles.xml": xmlHead + `<styleSheet ` + nsMain + `><numFmts count="3">` +
			`<numFmt numFmtId="164" formatCode="yyyy\-mm\-dd&quot;T&quot;hh:mm"/>` +
			`<numFmt numFmtId="165" formatCode="&quot;day&quot; 0.00"/>` +
			`<numFmt numFmtId="166" formatCode="[h]:mm;[Red]0"/></numFmts>` +
			`<cellStyleXfs count="1"><xf numFmtId="14"/></cellStyleXfs>` +
			`<cellXfs count="7"><xf numFmtId="0"/><xf numFmtId="14"/><xf numFmtId="164"/><xf numFmtId="165"/><xf numFmtId="22"/><xf numFmtId="20"/><xf numFmtId="166"/></cellXfs></styleSheet>`,
		"xl/worksheets/cover.xml": xmlHead + `<worksheet ` + nsMain + `><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>cover</t></is></c></row></sheetData></worksheet>`,
		"xl/worksheets/data.xml":  xmlHead + `<worksheet ` + nsMain + `>` + cols + `<sheetData>` + sheetData + `</sheetData></worksheet>`,
	})
}

// TestWorkbookMatchesExcelize reads workbooks, written by a spreadsheet
// library and by hand, with the workbook reader and with the library,
// and compares every cell and every row's text: numbers, dates in
// built-in and custom formats (in both day systems, before and after
// 1900-03-01), booleans, errors, shared, rich and inline strings with
// escapes, formulas, sparse rows and cells, and styles taken from a row or
// a column.
func TestWorkbookMatchesExcelize(t *testing.T) {
	library := func(t *testing.T, date1904 bool) []byte {
		x := excelize.NewFile()
		defer x.Close()
		if date1904 {
			yes := true
			x.SetWorkbookProps(&excelize.WorkbookPropsOptions{Date1904: &yes})
		}
		x.SetCellValue("Sheet1", "A1", "cover")
		x.NewSheet("Q3")
		date, _ := x.NewStyle(&excelize.Style{NumFmt: 14})
		custom := "yyyy-mm-dd hh:mm:ss"
		stamp, _ := x.NewStyle(&excelize.Style{CustomNumFmt: &custom})
		quoted := `"y" 0.0`
		notDate, _ := x.NewStyle(&excelize.Style{CustomNumFmt: &quoted})
		timeOfDay, _ := x.NewStyle(&excelize.Style{NumFmt: 21})
		set := func(ref string, v any, style int) {
			if err := x.SetCellValue("Q3", ref, v); err != nil {
				t.Fatal(err)
			}
			if style != 0 {
				x.SetCellStyle("Q3", ref, ref, style)
			}
		}
		for i, h := range []string{"n", "f", "s", "d", "ts", "b", "q", "tod"} {
			ref, _ := excelize.CoordinatesToCellName(i+1, 1)
			set(ref, h, 0)
		}
		for r := 2; r < 40; r++ {
			if r%7 == 0 {
				continue // a blank row inside the data
			}
			ref := func(c int) string { s, _ := excelize.CoordinatesToCellName(c, r); return s }
			set(ref(1), r*1000003-7, 0)
			set(ref(2), float64(r)/3, 0)
			if r%3 != 0 {
				set(ref(3), fmt.Sprintf("0%d, \"q\" \n x", r), 0)
			}
			set(ref(4), float64(r*997%50000)+0.25, date)
			set(ref(5), time.Date(1899+r%5, time.Month(r%12+1), r%28+1, r%24, r%60, r%60, 0, time.UTC), stamp)
			set(ref(6), r%2 == 0, 0)
			set(ref(7), float64(r)+0.5, notDate)
			set(ref(8), float64(r%3)+float64(r)/97, timeOfDay)
			if r%5 == 0 {
				x.SetCellFormula("Q3", ref(9), "A2&\"x\"")
			}
		}
		set("B45", "after a gap", 0)
		var buf bytes.Buffer
		if err := x.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	cells := `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="C1" t="s"><v>1</v></c><c r="D1" t="s"><v> 2 </v></c><c r="E1" t="s"><v>3</v></c></row>` +
		`<row r="3" s="1" customFormat="1"><c r="A3"><v>45000.5</v></c><c r="B3" s="2"><v>45000.75</v></c><c r="C3" s="3"><v>45000</v></c><c s="4"><v>1.5</v></c><c s="5"><v>0.25</v></c><c s="6"><v>2.5</v></c></row>` +
		`<row><c t="b"><v>1</v></c><c t="b"><v>0</v></c><c t="e"><v>#N/A</v></c><c t="str"><f>A1&amp;"x"</f><v>plainx</v></c><c t="str"><f>1+1</f><v>2</v></c><c><f>A9</f></c></row>` +
		`<row r="6"><c r="B6" t="inlineStr"><is><t>inline</t></is></c><c r="C6" t="inlineStr"><is><r><t>in</t></r><r><t>_x0041_</t></r></is></c><c r="D6" t="d"><v>2024-02-29T12:00:00Z</v></c><c r="F6"><v>59</v></c><c r="G6"><v>60</v></c><c r="H6"><v>61.5</v></c><c r="I6"><v>0</v></c></row>` +
		`<row r="8"><c r="A8"><v>1e308</v></c><c r="B8"><v>-1.5</v></c><c r="C8" s="0"><v>3</v></c><c r="E8"/></row>` +
		`<row r="9"><c r="A9" t="n"></c></row>`
	cols := `<cols><col min="1" max="1" style="0"/><col min="2" max="9" style="1"/></cols>`
	cases := []struct {
		name string
		book []byte
		opts input.Options
	}{
		{"library, first sheet", library(t, false), input.Options{}},
		{"library, named sheet", library(t, false), input.Options{Sheet: "Q3"}},
		{"library, 1904", library(t, true), input.Options{Sheet: "Q3", Null: []string{"true", "8.5"}}},
		{"by hand", handWorkbook(t, false, cells, ""), input.Options{Sheet: "Data"}},
		{"by hand, column styles", handWorkbook(t, false, cells, cols), input.Options{Sheet: "Data"}},
		{"by hand, 1904", handWorkbook(t, true, cells, cols), input.Options{Sheet: "Data"}},
		{"by hand, cover", handWorkbook(t, false, cells, cols), input.Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := excelizeSheet(t, tc.book, tc.opts)
			got, err := sheetFile(tc.book, tc.opts).loadSheet()
			if err != nil {
				t.Fatal(err)
			}
			if len(want.rows) < 1 {
				t.Fatalf("the reference read %d rows", len(want.rows))
			}
			if len(got.rows) != len(want.rows) {
				t.Fatalf("%d rows, want %d", len(got.rows), len(want.rows))
			}
			for r := range want.rows {
				if !reflect.DeepEqual(got.rows[r], want.rows[r]) || !bytes.Equal(got.text[r], want.text[r]) {
					t.Errorf("row %d:\n got %q\nwant %q", r+1, got.text[r], want.text[r])
				}
			}
		})
	}
}

// TestWorkbookErrors: a file that is not a workbook, or a workbook whose
// sheet is corrupt, is a format error; a sheet it does not have is an
// option error that lists the sheets it has.
func TestWorkbookErrors(t *testing.T) {
	_, err := sheetFile([]byte("id,name\n1,a\n"), input.Options{}).loadSheet()
	if !errors.Is(err, input.ErrFormat) || !strings.Contains(err.Error(), "not an Excel workbook") {
		t.Fatalf("not a workbook: %v", err)
	}
	book := handWorkbook(t, false, `<row r="1"><c r="A1"><v>1</v></c></row>`, "")
	_, err = sheetFile(book, input.Options{Sheet: "Nope"}).loadSheet()
	if !errors.Is(err, input.ErrOption) || !strings.Contains(err.Error(), `no sheet "Nope" (it has Cover, Data)`) {
		t.Fatalf("a missing sheet: %v", err)
	}
	for _, bad := range []string{
		`<row r="1"><c r="A1" t="s"><v>9</v></c></row>`,       // no such shared string
		`<row r="2"><c r="A2"><v>1</v></c></row><row r="1"/>`, // rows out of order
		`<row r="1"><c r="1A"><v>1</v></c></row>`,             // not a reference
		`<row r="1"><c r="A1"><v>1</v></c>`,                   // cut short
	} {
		_, err := sheetFile(handWorkbook(t, false, bad, ""), input.Options{Sheet: "Data"}).loadSheet()
		if !errors.Is(err, input.ErrFormat) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
