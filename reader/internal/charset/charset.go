package charset

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/transform"
)

// UTF8 is the canonical name of the encoding text files are read in by
// default.
const UTF8 = "utf-8"

// EncodingName returns the canonical name, in the WHATWG Encoding
// Standard, of the encoding a user names (any of its labels: latin1 is
// windows-1252, as browsers read it). The replacement encoding, which
// reads any text as one U+FFFD, is refused.
func EncodingName(label string) (string, error) {
	e, err := htmlindex.Get(strings.TrimSpace(label))
	if err != nil {
		return "", fmt.Errorf("unknown encoding %q: give a name of the WHATWG Encoding Standard, such as windows-1252, iso-8859-15, shift_jis, gb18030 or utf-16le", label)
	}
	name, err := htmlindex.Name(e)
	if err != nil || name == "replacement" {
		return "", fmt.Errorf("encoding %q cannot be read: give the encoding the file is written in", label)
	}
	return name, nil
}

// invalid is what a decoder writes for bytes that are not a character of
// its encoding: a byte that is never valid UTF-8, so that the row holding
// it is a bad row (CodeUTF8) rather than one whose text silently holds a
// U+FFFD that the file did not say.
const invalid = 0xff

// Charset is how the bytes of a text file become the UTF-8 its scanners
// read.
type Charset struct {
	Name string // canonical
	bom  int    // bytes of a byte order mark that start the stream, not decoded
	new  func() transform.Transformer
}

// Sniff decides the charset of a stream that starts with head (its first
// bytes, at least 3 when it has them): a UTF-16 byte order mark decides it
// whatever Options.Encoding says, as the WHATWG decode algorithm does, and
// a UTF-8 one makes it UTF-8 (the scanners drop that mark); otherwise it
// is Options.Encoding's. A nil charset means the bytes are read as they
// are.
func Sniff(head []byte, name string) (*Charset, error) {
	switch {
	case bytes.HasPrefix(head, []byte("\xef\xbb\xbf")):
		return nil, nil
	case bytes.HasPrefix(head, []byte("\xff\xfe")):
		name = "utf-16le"
	case bytes.HasPrefix(head, []byte("\xfe\xff")):
		name = "utf-16be"
	case name == "" || name == UTF8:
		return nil, nil
	}
	cs := &Charset{Name: name}
	switch name {
	case "utf-16le", "utf-16be":
		if len(head) >= 2 && (head[0] == 0xff && head[1] == 0xfe || head[0] == 0xfe && head[1] == 0xff) {
			cs.bom = 2
		}
		big := name == "utf-16be"
		cs.new = func() transform.Transformer { return &utf16Decoder{big: big} }
		return cs, nil
	}
	e, err := htmlindex.Get(name)
	if err != nil {
		return nil, err
	}
	if cm, ok := e.(*charmap.Charmap); ok {
		d := newByteDecoder(cm)
		cs.new = func() transform.Transformer { return d }
		return cs, nil
	}
	// A multibyte encoding: x/text's decoder, with what it replaced by
	// U+FFFD made invalid. GB18030 can say U+FFFD itself, so its U+FFFD
	// stays: a byte sequence it cannot read is U+FFFD there.
	keep := name == "gb18030"
	cs.new = func() transform.Transformer {
		d := e.NewDecoder()
		if keep {
			return d
		}
		return &marking{t: d}
	}
	return cs, nil
}

// Reader returns the UTF-8 text of r, whose first bytes are the charset's
// byte order mark, if it has one.
func (cs *Charset) Reader(r io.Reader) (io.Reader, error) {
	if cs.bom > 0 {
		if _, err := io.CopyN(io.Discard, r, int64(cs.bom)); err != nil {
			return nil, err
		}
	}
	return transform.NewReader(r, cs.new()), nil
}

// byteDecoder decodes a single-byte encoding by table.
type byteDecoder struct {
	transform.NopResetter
	to [256][]byte // UTF-8 of each byte; {invalid} where the encoding has no character
}

func newByteDecoder(cm *charmap.Charmap) *byteDecoder {
	d := &byteDecoder{}
	for b := 0; b < 256; b++ {
		r := cm.DecodeByte(byte(b))
		if r == utf8.RuneError {
			d.to[b] = []byte{invalid}
			continue
		}
		d.to[b] = utf8.AppendRune(nil, r)
	}
	return d
}

func (d *byteDecoder) Transform(dst, src []byte, _ bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		c := src[nSrc]
		if c < utf8.RuneSelf {
			if nDst == len(dst) {
				return nDst, nSrc, transform.ErrShortDst
			}
			dst[nDst] = c
			nDst++
			nSrc++
			continue
		}
		u := d.to[c]
		if nDst+len(u) > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		nDst += copy(dst[nDst:], u)
		nSrc++
	}
	return nDst, nSrc, nil
}

// utf16Decoder decodes UTF-16 without a byte order mark; an unpaired
// surrogate, or an odd byte at the end, is invalid.
type utf16Decoder struct {
	transform.NopResetter
	big bool
}

func (d *utf16Decoder) unit(b []byte) rune {
	if d.big {
		return rune(b[0])<<8 | rune(b[1])
	}
	return rune(b[1])<<8 | rune(b[0])
}

func (d *utf16Decoder) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		if len(src)-nSrc < 2 {
			if !atEOF {
				return nDst, nSrc, transform.ErrShortSrc
			}
			if nDst == len(dst) {
				return nDst, nSrc, transform.ErrShortDst
			}
			dst[nDst] = invalid
			return nDst + 1, len(src), nil
		}
		r, n := d.unit(src[nSrc:]), 2
		switch {
		case r >= 0xd800 && r < 0xdc00:
			if len(src)-nSrc < 4 {
				if !atEOF {
					return nDst, nSrc, transform.ErrShortSrc
				}
				r = -1
				break
			}
			lo := d.unit(src[nSrc+2:])
			if lo < 0xdc00 || lo >= 0xe000 {
				r = -1
				break
			}
			r, n = 0x10000+(r-0xd800)<<10+(lo-0xdc00), 4
		case r >= 0xdc00 && r < 0xe000:
			r = -1
		}
		size := 1
		if r >= 0 {
			size = utf8.RuneLen(r)
		}
		if nDst+size > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		if r < 0 {
			dst[nDst] = invalid
		} else {
			utf8.EncodeRune(dst[nDst:], r)
		}
		nDst += size
		nSrc += n
	}
	return nDst, nSrc, nil
}

// marking wraps a decoder of an encoding that has no U+FFFD of its own,
// so that every U+FFFD it writes stands for bytes it could not read: each
// becomes invalid bytes. A decoder writes whole characters, so a U+FFFD
// is never split between two calls.
type marking struct{ t transform.Transformer }

var replacement = []byte(string(utf8.RuneError))

func (m *marking) Reset() { m.t.Reset() }

func (m *marking) Transform(dst, src []byte, atEOF bool) (int, int, error) {
	nDst, nSrc, err := m.t.Transform(dst, src, atEOF)
	out := dst[:nDst]
	for {
		i := bytes.Index(out, replacement)
		if i < 0 {
			break
		}
		out[i], out[i+1], out[i+2] = invalid, invalid, invalid
		out = out[i+3:]
	}
	return nDst, nSrc, err
}
