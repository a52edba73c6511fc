package xlsx

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
	"unicode/utf8"
)

// Workbook is an open workbook: its sheets' names and where their cells
// are. It is not safe for concurrent use.
type Workbook struct {
	// Sheets are the names of the workbook's sheets, in its order.
	Sheets []string
	// Date1904 tells that the workbook counts its dates from 1904
	// rather than from 1900.
	Date1904 bool

	files  map[string]*zip.File // by name, and by lower-cased name
	parts  map[string]string    // a sheet's name → its part
	sst    string               // the shared strings' part, "" if none
	styles string               // the styles' part, "" if none

	strings []string // the shared strings, once read
	fmts    []numFmt // the cell formats' number formats, once read
	fmtRead bool
}

// Cell is one cell of a sheet.
type Cell struct {
	// Value is the cell's value as the workbook stores it: the text of a
	// shared or inline string, the number's text, 0 or 1 for a boolean,
	// an error's text (#N/A), a date's ISO 8601 text (type d), a
	// formula's cached result; "" for none.
	Value string
	// Type is the cell's type as the workbook marks it: "" or "n" (a
	// number), "s" (a shared string), "inlineStr", "str" (a formula's
	// text), "b", "e" or "d".
	Type string
	// Style is the index of the cell's format: the cell's own, or else
	// its row's, or else its column's.
	Style int
	// Formula tells the cell has a formula.
	Formula bool
}

// numFmt is a cell format's number format: a built-in format's number,
// or a custom format's code.
type numFmt struct {
	id   int
	code string
	ok   bool
}

const (
	relOfficeDocument = "/officeDocument"
	relSharedStrings  = "/sharedStrings"
	relStyles         = "/styles"
	relWorksheet      = "/worksheet"
)

// Open reads the workbook's list of sheets from r, a zip file of size
// bytes. The sheets' cells are read by Rows.
func Open(r io.ReaderAt, size int64) (*Workbook, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, err
	}
	w := &Workbook{files: map[string]*zip.File{}, parts: map[string]string{}}
	for _, f := range zr.File {
		name := strings.TrimPrefix(strings.ReplaceAll(f.Name, `\`, "/"), "/")
		if _, dup := w.files[name]; !dup {
			w.files[name] = f
		}
		if _, dup := w.files[strings.ToLower(name)]; !dup {
			w.files[strings.ToLower(name)] = f
		}
	}
	book := "xl/workbook.xml"
	if rels, err := w.rels("_rels/.rels"); err == nil {
		for _, rel := range rels {
			if strings.HasSuffix(rel.Type, relOfficeDocument) {
				book = strings.TrimPrefix(rel.Target, "/")
				break
			}
		}
	}
	dir := path.Dir(book)
	rels, err := w.rels(path.Join(dir, "_rels", path.Base(book)+".rels"))
	if err != nil {
		return nil, err
	}
	targets := map[string]string{}
	for _, rel := range rels {
		target := resolve(dir, rel.Target)
		targets[rel.ID] = target
		switch {
		case strings.HasSuffix(rel.Type, relSharedStrings) && w.sst == "":
			w.sst = target
		case strings.HasSuffix(rel.Type, relStyles) && w.styles == "":
			w.styles = target
		}
	}
	if w.sst == "" && w.file("xl/sharedStrings.xml") != nil {
		w.sst = "xl/sharedStrings.xml"
	}
	if w.styles == "" && w.file("xl/styles.xml") != nil {
		w.styles = "xl/styles.xml"
	}
	var wb struct {
		Pr *struct {
			Date1904 string `xml:"date1904,attr"`
		} `xml:"workbookPr"`
		Sheets []struct {
			Name string     `xml:"name,attr"`
			Attr []xml.Attr `xml:",any,attr"`
		} `xml:"sheets>sheet"`
	}
	if err := w.decode(book, &wb); err != nil {
		return nil, err
	}
	if wb.Pr != nil {
		w.Date1904, _ = strconv.ParseBool(strings.TrimSpace(wb.Pr.Date1904))
	}
	for _, s := range wb.Sheets {
		w.Sheets = append(w.Sheets, s.Name)
		for _, a := range s.Attr {
			if a.Name.Local == "id" && a.Name.Space != "" {
				w.parts[s.Name] = targets[a.Value]
			}
		}
	}
	return w, nil
}

// resolve is the part a relationship's target names from the folder dir.
func resolve(dir, target string) string {
	if strings.HasPrefix(target, "/") {
		return strings.TrimPrefix(target, "/")
	}
	return strings.TrimPrefix(path.Join(dir, target), "/")
}

func (w *Workbook) file(name string) *zip.File {
	if f, ok := w.files[name]; ok {
		return f
	}
	return w.files[strings.ToLower(name)]
}

// open opens the part name.
func (w *Workbook) open(name string) (io.ReadCloser, error) {
	f := w.file(name)
	if f == nil {
		return nil, fmt.Errorf("the workbook has no part %s", name)
	}
	return f.Open()
}

// decode reads the part name as XML into v.
func (w *Workbook) decode(name string, v any) error {
	rc, err := w.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := xml.NewDecoder(rc).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

type relationship struct {
	ID     string `xml:"Id,attr"`
	Type   string `xml:"Type,attr"`
	Target string `xml:"Target,attr"`
}

// rels reads a relationships part.
func (w *Workbook) rels(name string) ([]relationship, error) {
	var rels struct {
		List []relationship `xml:"Relationship"`
	}
	if err := w.decode(name, &rels); err != nil {
		return nil, err
	}
	return rels.List, nil
}

// text is a string item: a shared string or an inline one, plain or in
// runs of rich text (their phonetic runs left out).
type text struct {
	T *struct {
		Val string `xml:",chardata"`
	} `xml:"t"`
	R []struct {
		T *struct {
			Val string `xml:",chardata"`
		} `xml:"t"`
	} `xml:"r"`
}

func (x *text) String() string {
	var b strings.Builder
	if x.T != nil {
		b.WriteString(x.T.Val)
	}
	for _, r := range x.R {
		if r.T != nil {
			b.WriteString(r.T.Val)
		}
	}
	return unescape(b.String())
}

// unescape decodes the _xHHHH_ escapes of characters XML cannot hold
// (_x005F_ is the underscore); an escape of no character is dropped.
func unescape(s string) string {
	if !strings.Contains(s, "_x") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if r, ok := escape(s[i:]); ok {
			if r == 0x5F {
				b.WriteByte('_')
			} else if utf8.ValidRune(r) {
				b.WriteRune(r)
			}
			i += 7
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// escape reads an _xHHHH_ escape at the start of s.
func escape(s string) (rune, bool) {
	if len(s) < 7 || s[0] != '_' || s[1] != 'x' || s[6] != '_' {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[2:6]) {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// sharedStrings reads the shared strings once.
func (w *Workbook) sharedStrings() ([]string, error) {
	if w.strings != nil || w.sst == "" {
		return w.strings, nil
	}
	rc, err := w.open(w.sst)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	list := []string{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.sst, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "si" {
			var si text
			if err := d.DecodeElement(&si, &se); err != nil {
				return nil, fmt.Errorf("%s: %w", w.sst, err)
			}
			list = append(list, si.String())
		}
	}
	w.strings = list
	return list, nil
}

// NumFmt is the number format of the cell format style: a built-in
// format's number (0-49 and the languages' 27-36, 50-62, 67-81), or else
// the code of the workbook's custom format, or neither (ok false) when
// the workbook has no such cell format.
func (w *Workbook) NumFmt(style int) (id int, code string, ok bool) {
	if !w.fmtRead {
		w.fmtRead = true
		w.fmts, _ = w.readStyles()
	}
	if style < 0 || style >= len(w.fmts) {
		return 0, "", false
	}
	f := w.fmts[style]
	return f.id, f.code, f.ok
}

func builtIn(id int) bool {
	return (0 <= id && id <= 4) || (9 <= id && id <= 22) || (37 <= id && id <= 49) ||
		(27 <= id && id <= 36) || (50 <= id && id <= 62) || (67 <= id && id <= 81)
}

func (w *Workbook) readStyles() ([]numFmt, error) {
	if w.styles == "" {
		return nil, nil
	}
	var st struct {
		NumFmts []struct {
			ID   int    `xml:"numFmtId,attr"`
			Code string `xml:"formatCode,attr"`
		} `xml:"numFmts>numFmt"`
		Xfs []struct {
			ID *int `xml:"numFmtId,attr"`
		} `xml:"cellXfs>xf"`
	}
	if err := w.decode(w.styles, &st); err != nil {
		return nil, err
	}
	fmts := make([]numFmt, len(st.Xfs))
	for i, xf := range st.Xfs {
		f := numFmt{ok: true}
		if xf.ID != nil {
			if builtIn(*xf.ID) {
				f.id = *xf.ID
			} else {
				for _, nf := range st.NumFmts {
					if nf.ID == *xf.ID {
						f.code = nf.Code
					}
				}
			}
		}
		fmts[i] = f
	}
	return fmts, nil
}

// ErrNoSheet is returned by Rows for a name the workbook has no sheet of.
var ErrNoSheet = errors.New("no such sheet")

// Rows reads the cells of the sheet name: the rows up to the last with a
// cell that has a value or a formula, each up to its last such cell; a row
// with none, and a cell left out, are empty.
func (w *Workbook) Rows(name string) ([][]Cell, error) {
	part, ok := w.parts[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoSheet, name)
	}
	sst, err := w.sharedStrings()
	if err != nil {
		return nil, err
	}
	rc, err := w.open(part)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	d := xml.NewDecoder(rc)
	type col struct{ min, max, style int }
	var (
		cols     []col
		rows     [][]Cell
		rowNum   int // the current row's number, from 1
		rowStyle int
		last     int // the number of the last row with a cell
		cells    []Cell
		at       int // the current cell's column, from 1
		inRow    bool
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", part, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "col":
				c := col{}
				for _, a := range el.Attr {
					n, _ := strconv.Atoi(a.Value)
					switch a.Name.Local {
					case "min":
						c.min = n
					case "max":
						c.max = n
					case "style":
						c.style = n
					}
				}
				cols = append(cols, c)
			case "row":
				inRow, cells, rowStyle, at = true, nil, 0, 0
				n := 0
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "r":
						n, _ = strconv.Atoi(a.Value)
					case "s":
						rowStyle, _ = strconv.Atoi(a.Value)
					}
				}
				if n > 0 {
					rowNum = n
				} else {
					rowNum++
				}
			case "c":
				if !inRow {
					continue
				}
				c, n, err := readCell(d, el, sst)
				if err != nil {
					return nil, fmt.Errorf("%s: row %d: %w", part, rowNum, err)
				}
				at++ // a cell that names no column follows the one before
				if n != 0 {
					at = n
				}
				if c.Value == "" && !c.Formula {
					continue
				}
				if c.Style == 0 {
					c.Style = rowStyle
				}
				if c.Style == 0 {
					for _, cl := range cols {
						if cl.min <= at && at <= cl.max && cl.style != 0 {
							c.Style = cl.style
							break
						}
					}
				}
				for len(cells) < at-1 {
					cells = append(cells, Cell{})
				}
				cells = append(cells, c)
			}
		case xml.EndElement:
			if el.Name.Local == "row" && inRow {
				inRow = false
				if len(cells) > 0 {
					for empty := rowNum - last - 1; empty > 0; empty-- {
						rows = append(rows, nil)
					}
					rows = append(rows, cells)
					last = rowNum
				}
			}
		}
	}
	return rows, nil
}

// readCell reads the cell element start: the cell, and its column from 1
// (0 when it names none).
func readCell(d *xml.Decoder, start xml.StartElement, sst []string) (Cell, int, error) {
	var c Cell
	at := 0
	for _, a := range start.Attr {
		switch a.Name.Local {
		case "r":
			n, err := column(a.Value)
			if err != nil {
				return c, 0, err
			}
			at = n
		case "s":
			n, err := strconv.ParseInt(a.Value, 10, 64)
			if err != nil {
				return c, 0, fmt.Errorf("cell %s: style %q", a.Value, a.Value)
			}
			if math.MinInt <= n && n <= math.MaxInt {
				c.Style = int(n)
			}
		case "t":
			c.Type = a.Value
		}
	}
	var is *text
	for {
		tok, err := d.Token()
		if err != nil {
			return c, 0, err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "v":
				if err := d.DecodeElement(&c.Value, &el); err != nil {
					return c, 0, err
				}
			case "f":
				c.Formula = true
				if err := d.Skip(); err != nil {
					return c, 0, err
				}
			case "is":
				is = &text{}
				if err := d.DecodeElement(is, &el); err != nil {
					return c, 0, err
				}
			default:
				if err := d.Skip(); err != nil {
					return c, 0, err
				}
			}
		case xml.EndElement:
			switch c.Type {
			case "s":
				if c.Value != "" {
					i, _ := strconv.Atoi(strings.TrimSpace(c.Value))
					if i < 0 || i >= len(sst) {
						return c, 0, fmt.Errorf("shared string %d: the workbook has %d", i, len(sst))
					}
					c.Value = sst[i]
				}
			case "inlineStr":
				if is != nil {
					c.Value = is.String()
				}
			}
			return c, at, nil
		}
	}
}

// column is the column, from 1, of a cell reference such as AB12.
func column(ref string) (int, error) {
	n, i := 0, 0
	for ; i < len(ref); i++ {
		c := ref[i] | 0x20
		if c < 'a' || c > 'z' {
			break
		}
		n = n*26 + int(c-'a'+1)
		if n > 16384 {
			break
		}
	}
	if i == 0 || n > 16384 || i == len(ref) {
		return 0, fmt.Errorf("cell reference %q", ref)
	}
	if r, err := strconv.Atoi(ref[i:]); err != nil || r < 1 || r > 1048576 {
		return 0, fmt.Errorf("cell reference %q", ref)
	}
	return n, nil
}

var (
	epoch1900 = time.Date(1899, time.December, 30, 0, 0, 0, 0, time.UTC)
	epoch1904 = time.Date(1904, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// Time is the date and time an Excel serial number v stands for, in a
// workbook that counts from 1904 or from 1900 (whose day 60 is the 29
// February 1900 that never was, shown as the 28th): to the second, or to
// the microsecond in the first two months of 1900. ok is false for a
// negative number or one that is not finite.
func Time(v float64, date1904 bool) (t time.Time, ok bool) {
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return time.Time{}, false
	}
	epoch := epoch1900
	if date1904 {
		epoch = epoch1904
	}
	days := int(v)
	if days <= 61 {
		// Excel's first days: the day and its fraction of the serial
		// number offset to a Julian day, the fraction rounded to the
		// microsecond.
		off := 15018.0
		if date1904 {
			off = 16480.0
		}
		whole, frac := math.Modf(v + off)
		days = int(whole) - int(off)
		jf := 0.5 + frac // the Julian day starts at noon: as it is counted
		frac = jf - 0.5
		const c1us, c1s = 1e3, 1e9
		n := int64(24*60*60*c1s*frac + c1us/2)
		ns := int((n%c1s)/c1us) * c1us
		n /= c1s
		t = time.Date(epoch.Year(), epoch.Month(), epoch.Day()+days, int(n/3600), int(n/60%60), int(n%60), ns, time.UTC)
		if !date1904 && v >= 1 && v < 60 {
			t = t.AddDate(0, 0, 1)
		}
		return t, true
	}
	frac := v - float64(days) + 1e-9
	t = epoch.AddDate(0, 0, days).Add(time.Duration(float64(24*time.Hour) * frac))
	if t.Nanosecond()/1e6 > 500 {
		return t.Round(time.Second), true
	}
	return t.Truncate(time.Second), true
}
