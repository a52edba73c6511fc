package xlsx

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// The cells a workbook's sheets hold, as this package reads them and as
// excelize, the library it replaced, reads them: value, type, style and
// number format must agree cell by cell.

type view struct {
	Value, Type string
	Style       int
	FmtID       int
	Code        string
	FmtOK       bool
}

var cellTypes = map[string]excelize.CellType{
	"b": excelize.CellTypeBool, "d": excelize.CellTypeDate, "n": excelize.CellTypeNumber,
	"e": excelize.CellTypeError, "s": excelize.CellTypeSharedString, "str": excelize.CellTypeFormula,
	"inlineStr": excelize.CellTypeInlineString,
}

// reference reads the workbook with excelize.
func reference(t *testing.T, data []byte) (sheets []string, date1904 bool, rows map[string][][]view) {
	t.Helper()
	x, err := excelize.OpenReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if p, err := x.GetWorkbookProps(); err == nil && p.Date1904 != nil {
		date1904 = *p.Date1904
	}
	rows = map[string][][]view{}
	for _, name := range x.GetSheetList() {
		sheets = append(sheets, name)
		raw, err := x.GetRows(name, excelize.Options{RawCellValue: true})
		if err != nil {
			t.Fatal(err)
		}
		var vs [][]view
		for r, row := range raw {
			var vr []view
			for c, v := range row {
				if v == "" {
					vr = append(vr, view{})
					continue
				}
				ref, _ := excelize.CoordinatesToCellName(c+1, r+1)
				typ, _ := x.GetCellType(name, ref)
				style, _ := x.GetCellStyle(name, ref)
				w := view{Value: v, Style: style}
				for k, ct := range cellTypes {
					if ct == typ {
						w.Type = k
					}
				}
				if w.Type == "n" {
					w.Type = ""
				}
				if st, err := x.GetStyle(style); err == nil && st != nil {
					w.FmtOK = true
					if st.CustomNumFmt != nil {
						w.Code = *st.CustomNumFmt
					} else {
						w.FmtID = st.NumFmt
					}
				}
				vr = append(vr, w)
			}
			vs = append(vs, vr)
		}
		rows[name] = vs
	}
	return sheets, date1904, rows
}

// ours reads the workbook with this package.
func ours(t *testing.T, data []byte) (sheets []string, date1904 bool, rows map[string][][]view) {
	t.Helper()
	w, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rows = map[string][][]view{}
	for _, name := range w.Sheets {
		raw, err := w.Rows(name)
		if err != nil {
			t.Fatal(err)
		}
		var vs [][]view
		for _, row := range raw {
			var vr []view
			for _, c := range row {
				if c.Value == "" {
					vr = append(vr, view{})
					continue
				}
				v := view{Value: c.Value, Type: c.Type, Style: c.Style}
				if v.Type == "n" {
					v.Type = ""
				}
				v.FmtID, v.Code, v.FmtOK = w.NumFmt(c.Style)
				if v.Code != "" {
					v.FmtID = 0
				}
				vr = append(vr, v)
			}
			vs = append(vs, vr)
		}
		rows[name] = vs
	}
	return w.Sheets, w.Date1904, rows
}

func compare(t *testing.T, data []byte) {
	t.Helper()
	wantSheets, want1904, want := reference(t, data)
	gotSheets, got1904, got := ours(t, data)
	if fmt.Sprint(gotSheets) != fmt.Sprint(wantSheets) || got1904 != want1904 {
		t.Fatalf("sheets %q (1904 %v), want %q (%v)", gotSheets, got1904, wantSheets, want1904)
	}
	cells := 0
	for _, name := range wantSheets {
		w, g := want[name], got[name]
		if len(g) != len(w) {
			t.Errorf("sheet %s: %d rows, want %d", name, len(g), len(w))
		}
		for r := range min(len(g), len(w)) {
			if len(g[r]) != len(w[r]) {
				t.Errorf("sheet %s row %d: %+v, want %+v", name, r+1, g[r], w[r])
				continue
			}
			for c := range w[r] {
				cells++
				if g[r][c] != w[r][c] {
					t.Errorf("sheet %s row %d col %d: %+v, want %+v", name, r+1, c+1, g[r][c], w[r][c])
				}
			}
		}
	}
	if cells == 0 {
		t.Fatal("no cells compared")
	}
}

// TestRowsAsExcelizeWrites compares a workbook excelize writes: shared
// strings, rich text, numbers, booleans, formulas with and without a
// result, dates in built-in and custom formats, rows and cells left out,
// several sheets, a 1904 workbook.
func TestRowsAsExcelizeWrites(t *testing.T) {
	for _, d1904 := range []bool{false, true} {
		t.Run(fmt.Sprint("1904=", d1904), func(t *testing.T) {
			x := excelize.NewFile()
			defer x.Close()
			if err := x.SetWorkbookProps(&excelize.WorkbookPropsOptions{Date1904: &d1904}); err != nil {
				t.Fatal(err)
			}
			x.NewSheet("Data")
			x.NewSheet("Third")
			x.SetCellValue("Sheet1", "B2", "cover")
			var styles []int
			for _, id := range []int{0, 1, 2, 14, 15, 16, 17, 18, 19, 20, 21, 22, 27, 45, 46, 47, 49, 57} {
				s, err := x.NewStyle(&excelize.Style{NumFmt: id})
				if err != nil {
					t.Fatal(err)
				}
				styles = append(styles, s)
			}
			for _, code := range []string{"yyyy-mm-dd hh:mm:ss", `0.00" days"`, "[$-409]mmmm d, yyyy", "hh:mm", "#,##0.00"} {
				s, err := x.NewStyle(&excelize.Style{CustomNumFmt: &code})
				if err != nil {
					t.Fatal(err)
				}
				styles = append(styles, s)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for r := 1; r <= 60; r++ {
				if r%7 == 0 {
					continue // a row left out
				}
				for c := 1; c <= 9; c++ {
					if rng.IntN(5) == 0 {
						continue
					}
					cell, _ := excelize.CoordinatesToCellName(c, r)
					var err error
					switch c {
					case 1:
						err = x.SetCellValue("Data", cell, r)
					case 2:
						err = x.SetCellValue("Data", cell, rng.Float64()*1e6)
					case 3:
						err = x.SetCellValue("Data", cell, fmt.Sprintf("0%d text _x0041_ _x005F_x0041_ \r\n %d", r, r))
					case 4:
						err = x.SetCellValue("Data", cell, time.Date(1899+rng.IntN(200), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1e9), time.UTC))
					case 5:
						err = x.SetCellValue("Data", cell, r%2 == 0)
					case 6:
						err = x.SetCellFormula("Data", cell, "A1*2")
					case 7:
						err = x.SetCellRichText("Data", cell, []excelize.RichTextRun{{Text: "rich "}, {Text: fmt.Sprint(r), Font: &excelize.Font{Bold: true}}})
					case 8:
						err = x.SetCellValue("Data", cell, rng.Float64()*50000)
					case 9:
						err = x.SetCellValue("Data", cell, "")
					}
					if err != nil {
						t.Fatal(err)
					}
					if c == 4 || c == 8 || c == 2 {
						x.SetCellStyle("Data", cell, cell, styles[rng.IntN(len(styles))])
					}
				}
			}
			x.SetCellValue("Third", "C5", 1.5)
			buf, err := x.WriteToBuffer()
			if err != nil {
				t.Fatal(err)
			}
			compare(t, buf.Bytes())
		})
	}
}

// workbook zips parts into a workbook; parts not given are a minimal one.
func workbook(t *testing.T, parts map[string]string) []byte {
	t.Helper()
	base := map[string]string{
		"[Content_Types].xml":        `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`,
		"_rels/.rels":                `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
		"xl/workbook.xml":            `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`,
		"xl/styles.xml":              `<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy\-mm\-dd"/><numFmt numFmtId="14" formatCode="dd/mm/yyyy"/></numFmts><cellXfs count="5"><xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="14"/><xf/><xf numFmtId="200"/></cellXfs></styleSheet>`,
		"xl/sharedStrings.xml":       `<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>one</t></si><si><r><t>ri</t></r><r><rPr><b/></rPr><t xml:space="preserve">ch </t></r><rPh><t>phonetic</t></rPh></si><si><t>a_x000D__x005F_x0041__xD800_b</t></si><si><t></t></si></sst>`,
	}
	for k, v := range parts {
		base[k] = v
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range base {
		if body == "" {
			continue
		}
		f, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const sheetHead = `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">`

// TestRowsAsExcelizeReads compares workbooks excelize does not write:
// inline strings, error, date and formula-text cells, cells and rows
// that name no position, styles from the row and the column, escapes,
// rich text with phonetic runs, a shared string that is empty.
func TestRowsAsExcelizeReads(t *testing.T) {
	for _, c := range []struct{ name, sheet string }{
		{"types", `<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>inline</t></is></c><c r="B1" t="e"><v>#N/A</v></c><c r="C1" t="d"><v>2024-01-02T03:04:05Z</v></c><c r="D1" t="str"><f>A1</f><v>12</v></c><c r="E1" t="str"><f>A1</f><v>text</v></c><c r="F1" t="b"><v>1</v></c><c r="G1" t="n"><v>1.5E+20</v></c><c r="H1" t="s"><v>1</v></c><c r="I1" t="s"><v>2</v></c><c r="J1" t="s"><v>3</v></c><c r="K1"><f>1/0</f></c><c r="L1" t="inlineStr"><is><r><t>in</t></r><r><t>line</t></r></is></c></row></sheetData>`},
		{"positions", `<sheetData><row><c><v>1</v></c><c><v>2</v></c><c r="E1"><v>5</v></c><c><v>6</v></c></row><row><c t="s"><v>0</v></c></row><row r="5"><c r="C5"><v>3</v></c><c r="D5" s="1"></c><c><v>7</v></c></row><row r="6"/><row><c r="A7"><v></v></c></row><row r="9" s="2" customFormat="1"><c r="B9"><v>45000</v></c></row></sheetData>`},
		{"styles", `<cols><col min="1" max="2" width="9" style="1"/><col min="3" max="3" style="4"/></cols><sheetData><row r="1"><c r="A1"><v>45000.5</v></c><c r="B1" s="2"><v>45000.25</v></c><c r="C1"><v>1</v></c><c r="D1" s="3"><v>2</v></c><c r="E1" s="9"><v>3</v></c></row><row r="2" s="2"><c r="A2"><v>4</v></c><c r="D2"><v>5</v></c></row></sheetData>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			compare(t, workbook(t, map[string]string{"xl/worksheets/sheet1.xml": sheetHead + c.sheet + `</worksheet>`}))
		})
	}
	t.Run("absolute targets, no shared strings, date1904", func(t *testing.T) {
		compare(t, workbook(t, map[string]string{
			"xl/workbook.xml":            `<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><workbookPr date1904="1"/><sheets><sheet name="B" sheetId="2" r:id="rId9"/><sheet name="A" sheetId="1" r:id="rId1"/></sheets></workbook>`,
			"xl/_rels/workbook.xml.rels": `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="/xl/worksheets/sheet1.xml"/><Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/other.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>`,
			"xl/sharedStrings.xml":       "",
			"xl/worksheets/sheet1.xml":   sheetHead + `<sheetData><row r="2"><c r="B2" s="1"><v>100</v></c></row></sheetData></worksheet>`,
			"xl/worksheets/other.xml":    sheetHead + `<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>b</t></is></c></row></sheetData></worksheet>`,
		}))
	})
}

// TestRowsRefusesABadSharedString: a shared string the workbook does not
// have is an error, not a short sheet.
func TestRowsRefusesABadSharedString(t *testing.T) {
	data := workbook(t, map[string]string{"xl/worksheets/sheet1.xml": sheetHead + `<sheetData><row r="1"><c r="A1" t="s"><v>4</v></c></row></sheetData></worksheet>`})
	w, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Rows("S"); err == nil || !strings.Contains(err.Error(), "shared string 4") {
		t.Fatalf("err = %v", err)
	}
	if _, err := w.Rows("T"); err == nil {
		t.Fatal("no error for a sheet the workbook has not")
	}
}

// TestTimeAsExcelize compares Excel's serial numbers turned into times:
// the first days of 1900 (and its 29 February that never was), their
// fractions, and dates to 9999, in both date systems.
func TestTimeAsExcelize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var vs []float64
	for i := 0; i <= 70*8; i++ {
		vs = append(vs, float64(i)/8)
	}
	for range 20000 {
		vs = append(vs, rng.Float64()*70, rng.Float64()*2958465, math.Round(rng.Float64()*2958465), float64(rng.IntN(2958465))+float64(rng.IntN(86400))/86400)
	}
	vs = append(vs, -1, 0.9999999999999, 60.99999999999, 61.999999999999, 1e-12, 59.5, 60.5)
	for _, d1904 := range []bool{false, true} {
		for _, v := range vs {
			want, err := excelize.ExcelDateToTime(v, d1904)
			got, ok := Time(v, d1904)
			if ok != (err == nil) || !got.Equal(want) {
				t.Fatalf("Time(%v, %v) = %v, %v; want %v, %v", v, d1904, got, ok, want, err)
			}
		}
	}
}

// TestColumn reads cell references' columns and refuses bad ones.
func TestColumn(t *testing.T) {
	for ref, want := range map[string]int{"A1": 1, "z9": 26, "AA10": 27, "XFD1048576": 16384, "A": 0, "1": 0, "XFE1": 0, "A0": 0, "A1048577": 0, "": 0} {
		got, err := column(ref)
		if got != want || (err == nil) != (want != 0) {
			t.Errorf("column(%q) = %d, %v; want %d", ref, got, err, want)
		}
	}
}
