package text

// An Excel workbook's sheet is read as a text file is: its rows become
// cells that the same plan pass, validator and partition reader take. The
// "offset" of a row is its index among the sheet's rows, and its bytes are
// a CSV rendering of its cells, which the partition checksums cover. The
// sheet is decoded whole, once per File (excelize reads a workbook into
// memory), so that a partition reads only its rows.

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/idemport/idemport/reader/internal/input"
	"github.com/idemport/idemport/reader/internal/partition"
	"github.com/idemport/idemport/reader/internal/value"
)

// sheet is the decoded rows of the sheet a File reads.
type sheet struct {
	rows [][]value.Cell
	text [][]byte // each row as CSV, what its checksum and rejects hold
}

// sheetOnce decodes the File's sheet on first use.
type sheetOnce struct {
	once sync.Once
	s    *sheet
	err  error
}

func (f *File) sheet() (*sheet, error) {
	f.sh.once.Do(func() { f.sh.s, f.sh.err = f.loadSheet() })
	return f.sh.s, f.sh.err
}

// loadSheet decodes the sheet Options.Sheet names, or the first: numbers
// as Excel stores them (the shortest text of their double), numbers whose
// format is a date or time as ISO 8601 (YYYY-MM-DD, or with the time of
// day), booleans as true and false, and text and errors (#N/A) as text.
// An empty cell is null.
func (f *File) loadSheet() (_ *sheet, err error) {
	if f.Comp != input.None {
		return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: an Excel workbook is a zip file already: decompress it first", input.ErrFormat)}
	}
	defer func() {
		if v := recover(); v != nil { // a hostile workbook must be a data error, not a crash
			err = &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: corrupt workbook (%v)", input.ErrFormat, v)}
		}
	}()
	src := io.NewSectionReader(f.In, 0, f.In.Size())
	x, err := excelize.OpenReader(&countingReaderAt{r: src, f: f.File})
	if err != nil {
		return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: not an Excel workbook: %v", input.ErrFormat, err)}
	}
	defer x.Close()
	name := f.Opts.Sheet
	list := x.GetSheetList()
	if name == "" && len(list) > 0 {
		name = list[0]
	}
	if !slices.Contains(list, name) {
		return nil, fmt.Errorf("%w: --sheet: the workbook has no sheet %q (it has %s)", input.ErrOption, name, strings.Join(list, ", "))
	}
	raw, err := x.GetRows(name, excelize.Options{RawCellValue: true})
	if err != nil {
		return nil, &input.ParseError{Path: f.Path, Offset: -1, Err: fmt.Errorf("%w: sheet %q: %v", input.ErrFormat, name, err)}
	}
	date1904 := false
	if p, err := x.GetWorkbookProps(); err == nil && p.Date1904 != nil {
		date1904 = *p.Date1904
	}
	formats := map[int]timeFormat{}
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
			if err != nil { // a formula's text result
				cells[c] = value.Cell{B: []byte(v), Kind: value.CellString}
				continue
			}
			style, _ := x.GetCellStyle(name, ref)
			tf, seen := formats[style]
			if !seen {
				tf = styleTimeFormat(x, style)
				formats[style] = tf
			}
			if tf != notTime {
				if t, err := excelize.ExcelDateToTime(num, date1904); err == nil && !math.IsInf(num, 0) {
					cells[c] = value.Cell{B: []byte(formatTime(t, tf)), Kind: value.CellString}
					continue
				}
			}
			cells[c] = value.Cell{B: []byte(v), Kind: value.CellText} // the number as Excel stores it
		}
		for _, m := range f.Opts.Null {
			for c := range cells {
				if cells[c].Kind != value.CellNull && string(cells[c].B) == m {
					cells[c] = value.Cell{Kind: value.CellNull}
				}
			}
		}
		s.rows = append(s.rows, cells)
		s.text = append(s.text, csvText(cells))
	}
	return s, nil
}

// timeFormat says what a number format shows of a number: no time, a
// date, or a date and time of day.
type timeFormat uint8

const (
	notTime timeFormat = iota
	dateOnly
	dateTime
)

// styleTimeFormat tells whether the number format of a style is a date or
// time format: a built-in one (14-22, 45-47) or a custom code with date or
// time letters outside its quoted text and brackets.
func styleTimeFormat(x *excelize.File, style int) timeFormat {
	st, err := x.GetStyle(style)
	if err != nil || st == nil {
		return notTime
	}
	code := ""
	if st.CustomNumFmt != nil {
		code = *st.CustomNumFmt
	}
	switch {
	case st.NumFmt == 14 || st.NumFmt == 15 || st.NumFmt == 16 || st.NumFmt == 17:
		return dateOnly
	case st.NumFmt == 22:
		return dateTime
	case st.NumFmt >= 18 && st.NumFmt <= 21, st.NumFmt >= 45 && st.NumFmt <= 47:
		return dateTime // times of day: on the day Excel counts from
	case code == "":
		return notTime
	}
	var b strings.Builder
	for i := 0; i < len(code); i++ {
		switch c := code[i]; c {
		case '"':
			j := strings.IndexByte(code[i+1:], '"')
			if j < 0 {
				i = len(code)
			} else {
				i += j + 1
			}
		case '[':
			j := strings.IndexByte(code[i:], ']')
			if j < 0 {
				i = len(code)
			} else {
				i += j
			}
		case '\\', '_', '*':
			i++
		default:
			b.WriteByte(c | 0x20)
		}
	}
	t := b.String()
	hasDate := strings.ContainsAny(t, "yd") || (strings.Contains(t, "m") && !strings.ContainsAny(t, "hs"))
	hasTime := strings.ContainsAny(t, "hs")
	switch {
	case hasDate && hasTime, hasTime:
		return dateTime
	case hasDate:
		return dateOnly
	}
	return notTime
}

// formatTime writes t, a date and time Excel counts without a zone, in
// ISO 8601: the date alone, or the date and the time of day to the
// millisecond Excel keeps.
func formatTime(t time.Time, tf timeFormat) string {
	if tf == dateOnly && t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	t = t.Round(time.Millisecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// csvText renders cells as a CSV row: nulls empty, the rest quoted when
// they must be.
func csvText(cells []value.Cell) []byte {
	var b []byte
	for i, c := range cells {
		if i > 0 {
			b = append(b, ',')
		}
		if c.Kind == value.CellNull {
			continue
		}
		if c.Kind == value.CellString || bytes.ContainsAny(c.B, ",\"\r\n") {
			b = append(b, '"')
			b = append(b, bytes.ReplaceAll(c.B, []byte(`"`), []byte(`""`))...)
			b = append(b, '"')
			continue
		}
		b = append(b, c.B...)
	}
	return b
}

// countingReaderAt counts the bytes excelize reads into the File's stats.
type countingReaderAt struct {
	r *io.SectionReader
	f *input.File
}

func (c *countingReaderAt) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.f.Stats.Bytes.Add(int64(n))
	return n, err
}

// sheetScanner yields the rows of a sheet from index pos on.
type sheetScanner struct {
	s      *sheet
	pos    int // next row
	start  int // the row next returned last
	width  int // the file's columns: shorter rows are padded with nulls
	crc    uint32
	cells  []value.Cell
	rowCRC uint32 // the CRC after the row next returned last
}

func newSheetScanner(s *sheet, offset int64, width int) *sheetScanner {
	return &sheetScanner{s: s, pos: int(offset), start: int(offset), width: width}
}

func (sc *sheetScanner) consume(i int) {
	sc.crc = crc32.Update(sc.crc, partition.Castagnoli, sc.s.text[i])
	sc.crc = crc32.Update(sc.crc, partition.Castagnoli, []byte{'\n'})
}

// skipLines leaves out the first n rows.
func (sc *sheetScanner) skipLines(n int) {
	for ; n > 0 && sc.pos < len(sc.s.rows); n-- {
		sc.consume(sc.pos)
		sc.pos++
	}
}

func (sc *sheetScanner) next() ([]value.Cell, *problem, error) {
	for sc.pos < len(sc.s.rows) && blank(sc.s.rows[sc.pos]) {
		sc.consume(sc.pos)
		sc.pos++
	}
	if sc.pos >= len(sc.s.rows) {
		return nil, nil, io.EOF
	}
	sc.start = sc.pos
	row := sc.s.rows[sc.pos]
	sc.consume(sc.pos)
	sc.pos++
	sc.rowCRC = sc.crc
	sc.cells = append(sc.cells[:0], row...)
	for len(sc.cells) < sc.width {
		sc.cells = append(sc.cells, value.Cell{Kind: value.CellNull})
	}
	return sc.cells, nil, nil
}

func blank(row []value.Cell) bool {
	for _, c := range row {
		if c.Kind != value.CellNull {
			return false
		}
	}
	return true
}

func (sc *sheetScanner) offset() int64   { return int64(sc.pos) }
func (sc *sheetScanner) rowStart() int64 { return int64(sc.start) }
func (sc *sheetScanner) raw() []byte     { return sc.s.text[sc.start] }
func (sc *sheetScanner) verbatim() bool  { return false }
func (sc *sheetScanner) ascii() bool     { return false }
func (sc *sheetScanner) crcNow() uint32  { return sc.crc }
func (sc *sheetScanner) resetCRC()       { sc.crc = 0 }

// crcTo is the CRC after the last row: end is where it ended.
func (sc *sheetScanner) crcTo(int64) uint32 { return sc.rowCRC }
