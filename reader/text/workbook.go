package text

// An Excel workbook (Office Open XML, .xlsx) is read here with archive/zip
// and encoding/xml rather than a spreadsheet library: a sheet needs only
// the workbook's sheet list, the shared strings, the cell formats' number
// formats and the sheet's cells, and a spreadsheet library's package
// initialisation (regular expressions and tables compiled before main) was
// a third of the command's start-up, paid by every run, workbook or not.

import (
	"archive/zip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"time"
)

// The limits of a sheet in Excel.
const (
	maxSheetRows = 1 << 20
	maxSheetCols = 1 << 14
)

// workbook is an opened workbook: its sheets in order, where each one's
// part is, its shared strings, its cell formats' number formats, and
// whether it counts days from 1904.
type workbook struct {
	zr       *zip.Reader
	parts    map[string]*zip.File // by lower-case name
	sheets   []wbSheet
	date1904 bool
	strings  []string
	xfFmt    []int          // numFmtId of each cell format (cellXfs), by style index
	custom   map[int]string // custom number format codes by numFmtId
}

type wbSheet struct{ name, part string }

// xlsxCell is a cell as the sheet stores it: its type attribute (t), its
// value as text (shared strings resolved, rich text joined), and its
// style, the cell's own or else its row's or column's.
type xlsxCell struct {
	t     string
	v     string
	style int
}

// openWorkbook reads the workbook's structure (not its sheets' cells) from
// r, size bytes long.
func openWorkbook(r io.ReaderAt, size int64) (*workbook, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, err
	}
	wb := &workbook{zr: zr, parts: map[string]*zip.File{}, custom: map[int]string{}}
	for _, f := range zr.File {
		wb.parts[strings.ToLower(strings.TrimPrefix(f.Name, "/"))] = f
	}
	main := "xl/workbook.xml"
	if rels, err := wb.rels("_rels/.rels", ""); err == nil {
		for _, rel := range rels {
			if strings.HasSuffix(rel.typ, "/officeDocument") {
				main = rel.target
			}
		}
	}
	if wb.parts[strings.ToLower(main)] == nil {
		return nil, fmt.Errorf("no workbook part (%s)", main)
	}
	dir := path.Dir(main)
	relPath := path.Join(dir, "_rels", path.Base(main)+".rels")
	rels, err := wb.rels(relPath, dir)
	if err != nil {
		return nil, err
	}
	byID := map[string]string{}
	sst, styles := path.Join(dir, "sharedStrings.xml"), path.Join(dir, "styles.xml")
	for _, rel := range rels {
		byID[rel.id] = rel.target
		switch {
		case strings.HasSuffix(rel.typ, "/sharedStrings"):
			sst = rel.target
		case strings.HasSuffix(rel.typ, "/styles"):
			styles = rel.target
		}
	}
	if err := wb.readWorkbook(main, byID); err != nil {
		return nil, err
	}
	if err := wb.readSharedStrings(sst); err != nil {
		return nil, err
	}
	if err := wb.readStyles(styles); err != nil {
		return nil, err
	}
	return wb, nil
}

// part opens the named part, or returns nil, nil when there is none.
func (wb *workbook) part(name string) (io.ReadCloser, error) {
	f := wb.parts[strings.ToLower(strings.TrimPrefix(name, "/"))]
	if f == nil {
		return nil, nil
	}
	return f.Open()
}

type wbRel struct{ id, typ, target string }

// rels reads a relationships part; targets are made paths from the
// package's root, relative ones resolved against dir.
func (wb *workbook) rels(name, dir string) ([]wbRel, error) {
	rc, err := wb.part(name)
	if rc == nil || err != nil {
		return nil, err
	}
	defer rc.Close()
	var out []wbRel
	err = walkXML(rc, func(d *xml.Decoder, se xml.StartElement) error {
		if se.Name.Local == "Relationship" {
			rel := wbRel{id: attr(se, "Id"), typ: attr(se, "Type"), target: attr(se, "Target")}
			if strings.HasPrefix(rel.target, "/") {
				rel.target = strings.TrimPrefix(rel.target, "/")
			} else {
				rel.target = path.Join(dir, rel.target)
			}
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

func (wb *workbook) readWorkbook(name string, byID map[string]string) error {
	rc, err := wb.part(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	return walkXML(rc, func(d *xml.Decoder, se xml.StartElement) error {
		switch se.Name.Local {
		case "workbookPr":
			v := attr(se, "date1904")
			wb.date1904 = v == "1" || v == "true"
		case "sheet":
			wb.sheets = append(wb.sheets, wbSheet{name: attr(se, "name"), part: byID[attr(se, "id")]})
		}
		return nil
	})
}

// readSharedStrings reads each string item's text: its own text and that
// of its runs, not the phonetic guides (rPh).
func (wb *workbook) readSharedStrings(name string) error {
	rc, err := wb.part(name)
	if rc == nil || err != nil {
		return err
	}
	defer rc.Close()
	return walkXML(rc, func(d *xml.Decoder, se xml.StartElement) error {
		if se.Name.Local != "si" {
			return nil
		}
		s, err := richText(d, se)
		wb.strings = append(wb.strings, s)
		return err
	})
}

// readStyles reads the number format of each cell format and the custom
// number formats' codes.
func (wb *workbook) readStyles(name string) error {
	rc, err := wb.part(name)
	if rc == nil || err != nil {
		return err
	}
	defer rc.Close()
	inXfs := false
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "cellXfs":
				inXfs = true
			case "xf":
				if inXfs {
					id, _ := strconv.Atoi(attr(el, "numFmtId"))
					wb.xfFmt = append(wb.xfFmt, id)
				}
			case "numFmt":
				if id, err := strconv.Atoi(attr(el, "numFmtId")); err == nil {
					wb.custom[id] = attr(el, "formatCode")
				}
			}
		case xml.EndElement:
			if el.Name.Local == "cellXfs" {
				inXfs = false
			}
		}
	}
}

// numFmt returns a style's number format: a built-in one by its id, or
// the code of a custom one ("" for none).
func (wb *workbook) numFmt(style int) (id int, code string) {
	if style < 0 || style >= len(wb.xfFmt) {
		return 0, ""
	}
	id = wb.xfFmt[style]
	if (id >= 0 && id <= 22) || (id >= 37 && id <= 49) || (27 <= id && id <= 36) || (50 <= id && id <= 62) || (67 <= id && id <= 81) {
		return id, "" // built in, or one of the built-in formats of a language
	}
	return id, wb.custom[id]
}

// rows reads a sheet's cells: row i of the result is the sheet's row i+1,
// cell j its column j+1; a cell with neither a value nor a formula is the
// zero xlsxCell, and so is a missing one. Trailing rows without such cells
// are left out, as are trailing cells of a row.
func (wb *workbook) rows(sh wbSheet) ([][]xlsxCell, error) {
	rc, err := wb.part(sh.part)
	if err != nil {
		return nil, err
	}
	if rc == nil {
		return nil, fmt.Errorf("sheet %q has no part (%s)", sh.name, sh.part)
	}
	defer rc.Close()
	var (
		out       [][]xlsxCell
		colStyles []wbColStyle
		rowNum    int
		rowStyle  int
		row       []xlsxCell
		col       int
	)
	end := func() {
		if len(row) > 0 {
			for len(out) < rowNum-1 {
				out = append(out, nil)
			}
			out = append(out, row)
		}
		row = nil
	}
	d := xml.NewDecoder(rc)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "col":
				lo, _ := strconv.Atoi(attr(el, "min"))
				hi, _ := strconv.Atoi(attr(el, "max"))
				st, _ := strconv.Atoi(attr(el, "style"))
				colStyles = append(colStyles, wbColStyle{lo, hi, st})
			case "row":
				n := rowNum + 1
				if r := attr(el, "r"); r != "" {
					if n, err = strconv.Atoi(r); err != nil || n < 1 || n > maxSheetRows {
						return nil, fmt.Errorf("row number %q", r)
					}
				}
				if n <= rowNum {
					return nil, fmt.Errorf("row %d after row %d", n, rowNum)
				}
				rowNum, col, row = n, 0, nil
				rowStyle, _ = strconv.Atoi(attr(el, "s"))
			case "c":
				col++
				if ref := attr(el, "r"); ref != "" {
					if col, err = refColumn(ref); err != nil {
						return nil, err
					}
				}
				c, hasF, err := readCell(d, el, wb.strings)
				if err != nil {
					return nil, err
				}
				if c.v == "" && !hasF {
					continue
				}
				if c.style == 0 {
					c.style = rowStyle
				}
				if c.style == 0 {
					for _, cs := range colStyles {
						if cs.lo <= col && col <= cs.hi && cs.style != 0 {
							c.style = cs.style
							break
						}
					}
				}
				for len(row) < col-1 {
					row = append(row, xlsxCell{})
				}
				row = append(row, c)
			}
		case xml.EndElement:
			if el.Name.Local == "row" {
				end()
			}
		}
	}
	return out, nil
}

type wbColStyle struct{ lo, hi, style int }

// readCell reads a c element: its type, value and style, and whether it
// has a formula.
func readCell(d *xml.Decoder, start xml.StartElement, sst []string) (c xlsxCell, hasF bool, err error) {
	c.t = attr(start, "t")
	if s := attr(start, "s"); s != "" {
		if c.style, err = strconv.Atoi(s); err != nil {
			return c, false, fmt.Errorf("cell style %q", s)
		}
	}
	var v, inline string
	hasInline := false
	for {
		tok, err := d.Token()
		if err != nil {
			return c, false, err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "v":
				if v, err = elementText(d); err != nil {
					return c, false, err
				}
			case "f":
				hasF = true
				if err := d.Skip(); err != nil {
					return c, false, err
				}
			case "is":
				hasInline = true
				if inline, err = richText(d, el); err != nil {
					return c, false, err
				}
			default:
				if err := d.Skip(); err != nil {
					return c, false, err
				}
			}
		case xml.EndElement:
			switch c.t {
			case "s":
				if v != "" {
					i, err := strconv.Atoi(strings.TrimSpace(v))
					if err != nil || i < 0 || i >= len(sst) {
						return c, false, fmt.Errorf("shared string %q out of range", v)
					}
					v = sst[i]
				}
			case "inlineStr":
				if hasInline {
					v = inline
				}
			}
			c.v = v
			return c, hasF, nil
		}
	}
}

// richText reads the text of a string item (si or is) up to its end: its
// own t and those of its runs (r), with the _xHHHH_ escapes of characters
// XML cannot hold decoded.
func richText(d *xml.Decoder, start xml.StartElement) (string, error) {
	var b strings.Builder
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return "", err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch {
			case el.Name.Local == "t" && (depth == 0 || depth == 1):
				s, err := elementText(d)
				if err != nil {
					return "", err
				}
				b.WriteString(s)
			case el.Name.Local == "r" && depth == 0:
				depth++
			default:
				if err := d.Skip(); err != nil {
					return "", err
				}
			}
		case xml.EndElement:
			if depth == 0 {
				return unescapeBSTR(b.String()), nil
			}
			depth--
		}
	}
}

// elementText reads the character data of an element whose start was just
// read, up to its end.
func elementText(d *xml.Decoder) (string, error) {
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err != nil {
			return "", err
		}
		switch el := tok.(type) {
		case xml.CharData:
			b.Write(el)
		case xml.StartElement:
			if err := d.Skip(); err != nil {
				return "", err
			}
		case xml.EndElement:
			return b.String(), nil
		}
	}
}

// unescapeBSTR decodes the escapes _xHHHH_ (a UTF-16 code unit in hex) by
// which a workbook stores characters XML 1.0 does not allow; _x005F_ is an
// underscore, so that a literal escape survives.
func unescapeBSTR(s string) string {
	if !strings.Contains(s, "_x") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if i+7 <= len(s) && s[i] == '_' && s[i+1] == 'x' && s[i+6] == '_' && isHex4([]byte(s[i+2:i+6])) {
			n, _ := strconv.ParseUint(s[i+2:i+6], 16, 16)
			switch {
			case n == 0x5F:
				b.WriteByte('_')
			case n < 0xD800 || n > 0xDFFF:
				b.WriteRune(rune(n))
			} // a lone half of a surrogate pair is no character: dropped
			i += 7
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// refColumn returns the column (from 1) of a cell reference such as "B7".
func refColumn(ref string) (int, error) {
	col, i := 0, 0
	for ; i < len(ref); i++ {
		c := ref[i] | 0x20
		if c < 'a' || c > 'z' {
			break
		}
		col = col*26 + int(c-'a'+1)
		if col > maxSheetCols {
			return 0, fmt.Errorf("cell reference %q", ref)
		}
	}
	if i == 0 {
		return 0, fmt.Errorf("cell reference %q", ref)
	}
	n, err := strconv.Atoi(ref[i:])
	if err != nil || n < 1 || n > maxSheetRows {
		return 0, fmt.Errorf("cell reference %q", ref)
	}
	return col, nil
}

// walkXML calls fn for each start element of the document in r.
func walkXML(r io.Reader, fn func(*xml.Decoder, xml.StartElement) error) error {
	d := xml.NewDecoder(r)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if err := fn(d, se); err != nil {
				return err
			}
		}
	}
}

// attr returns the value of the attribute whose local name is name,
// whatever its namespace, or "".
func attr(se xml.StartElement, name string) string {
	for _, a := range se.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// Days Excel counts from: the 1900 system's day 0 is 1899-12-30 (so that
// its day 60 is 1900-02-29, a day that was not), the 1904 system's day 0
// is 1904-01-01.
var (
	excelEpoch1900 = time.Date(1899, time.December, 30, 0, 0, 0, 0, time.UTC)
	excelEpoch1904 = time.Date(1904, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// excelTime converts a serial date, days since the workbook's epoch and a
// fraction of a day, to a date and time without a zone, to the second.
// Days up to 61 are converted by the Julian day, so that the 1900 system's
// first two months, before the day that was not, fall on their dates.
func excelTime(serial float64, date1904 bool) (time.Time, error) {
	if serial < 0 || math.IsNaN(serial) || math.IsInf(serial, 0) {
		return time.Time{}, fmt.Errorf("invalid date %v", serial)
	}
	var t time.Time
	whole := int(serial)
	if whole <= 61 {
		offset := 15018.0
		if date1904 {
			offset = 16480.0
		}
		t = julianTime(2400000.5, serial+offset)
	} else {
		frac := serial - float64(whole) + 1e-9
		t = excelEpoch1900
		if date1904 {
			t = excelEpoch1904
		}
		t = t.AddDate(0, 0, whole).Add(time.Duration(float64(24*time.Hour) * frac))
		if t.Nanosecond()/1e6 > 500 {
			t = t.Round(time.Second)
		} else {
			t = t.Truncate(time.Second)
		}
	}
	if !date1904 && serial >= 1 && serial < 60 {
		t = t.AddDate(0, 0, 1)
	}
	return t, nil
}

// julianTime is the date and time of the Julian day part1+part2 (split for
// precision), by Fliegel and Van Flandern's algorithm (CACM 11(10), 1968).
func julianTime(part1, part2 float64) time.Time {
	i1, f1 := math.Modf(part1)
	i2, f2 := math.Modf(part2)
	days, frac := i1+i2, f1+f2
	switch {
	case -0.5 < frac && frac < 0.5:
		frac += 0.5
	case frac >= 0.5:
		days++
		frac -= 0.5
	case frac <= -0.5:
		days--
		frac += 1.5
	}
	l := int(days) + 68569
	n := (4 * l) / 146097
	l -= (146097*n + 3) / 4
	i := (4000 * (l + 1)) / 1461001
	l = l - (1461*i)/4 + 31
	j := (80 * l) / 2447
	day := l - (2447*j)/80
	l = j / 11
	month := j + 2 - (12 * l)
	year := 100*(n-49) + i + l
	ns := int64(24*60*60*1e9*frac + 1e3/2)
	nanos := int((ns%1e9)/1e3) * 1e3
	ns /= 1e9
	sec := int(ns % 60)
	ns /= 60
	return time.Date(year, time.Month(month), day, int(ns/60), int(ns%60), sec, nanos, time.UTC)
}
