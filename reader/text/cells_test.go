package text

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/idemport/idemport/reader/internal/value"
)

// cellsOf renders a row's cells as the test below writes them: each cell
// its text in brackets, a null as NULL.
func cellsOf(cells []value.Cell) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte(' ')
		}
		if c.Kind == value.CellNull {
			b.WriteString("NULL")
			continue
		}
		fmt.Fprintf(&b, "[%s]", c.B)
	}
	return b.String()
}

// TestScannerCells: the CSV scanner's cells of rows without quotes (made
// by split) and with them (made by the quote-aware path), one after
// another in either order: an empty field is null and a quoted empty one
// is text, a --null marker is null unquoted and text quoted, doubled
// quotes are one, CRLF and CR-less line ends, NUL and non-ASCII bytes are
// kept as they are, and only rows without quotes, NUL or non-ASCII bytes
// are ASCII. Read a byte at a time too, so that each row is cut where the
// buffer moved under it.
func TestScannerCells(t *testing.T) {
	type row struct {
		cells string
		ascii bool
	}
	in := "a,,NA,\"NA\",\"\"\n" +
		"1,2,3,4,5\r\n" +
		"\"x\"\"y\",z,,\"\",NA\r\n" +
		",,,,\n" +
		"h\xc3\xa9,\x00,NA,NAN,na\n" +
		"q\"q,w,e,r,t\n" +
		"\"multi\nline\",b,c,d,e\n" +
		"last,row,no,line,end"
	want := []row{
		{"[a] NULL NULL [NA] []", false},
		{"[1] [2] [3] [4] [5]", true},
		{"[x\"y] [z] NULL [] NULL", false},
		{"NULL NULL NULL NULL NULL", true},
		{"[h\xc3\xa9] [\x00] NULL [NAN] [na]", false},
		{"[q\"q] [w] [e] [r] [t]", false},
		{"[multi\nline] [b] [c] [d] [e]", false},
		{"[last] [row] [no] [line] [end]", true},
	}
	for _, oneByte := range []bool{false, true} {
		var r io.Reader = strings.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		sc := newCSVScanner(r, ',', true, 1<<20, 0)
		sc.nulls = [][]byte{[]byte("NA")}
		for i, w := range want {
			cells, prob, err := sc.next()
			if err != nil || prob != nil {
				t.Fatalf("one byte %v, row %d: %v, %v", oneByte, i, prob, err)
			}
			if got := cellsOf(cells); got != w.cells || sc.ascii() != w.ascii {
				t.Errorf("one byte %v, row %d: %q, ASCII %v; want %q, %v", oneByte, i, got, sc.ascii(), w.cells, w.ascii)
			}
			for k, c := range cells {
				if cap(c.B) != len(c.B) && bytes.Count(c.B, []byte{'"'}) == 0 {
					t.Errorf("one byte %v, row %d, cell %d: capacity %d past its %d bytes", oneByte, i, k, cap(c.B), len(c.B))
				}
			}
		}
		if _, _, err := sc.next(); err != io.EOF {
			t.Fatalf("one byte %v: after the last row: %v", oneByte, err)
		}
	}
}
