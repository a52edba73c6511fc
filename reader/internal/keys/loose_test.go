package keys

import (
	"bytes"
	"testing"
)

// TestAppendLoose: text keys a collation may compare as one (case,
// trailing spaces, accents, 'ß' and 's', full widths, ligatures) hash alike, others apart, and a plain key is
// keyed as its exact bytes; an ASCII key is loosened without allocating.
func TestAppendLoose(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{{"a", "A", true}, {"c ", "c", true}, {"é", "E", true}, {"Ä", "a", true}, {"ORD-1", "ord-1", true}, {"   ", "", true},
		{"ß", "s", true}, {"STRAẞE", "strase", true}, {"Ｋ1", "k1", true}, {"ﬁx", "FIX", true},
		{" x", "x", false}, {"ab", "abc", false}, {"a1", "a2", false}} {
		x, y := AppendLoose([]byte("pre"), []byte(c.a)), AppendLoose([]byte("pre"), []byte(c.b))
		if bytes.Equal(x, y) != c.same {
			t.Errorf("%q and %q: %q and %q, want alike %v", c.a, c.b, x, y, c.same)
		}
	}
	if got, want := AppendLoose(nil, []byte("abc")), AppendBytes(nil, 's', []byte("abc")); !bytes.Equal(got, want) {
		t.Errorf("plain key %q, want %q", got, want)
	}
	buf, in := make([]byte, 0, 64), []byte("ORD-1a ")
	if n := testing.AllocsPerRun(100, func() { AppendLoose(buf[:0], in) }); n != 0 {
		t.Errorf("loosening an ASCII key allocates %v times", n)
	}
	in = []byte("Straße-Ｋé")
	if n := testing.AllocsPerRun(100, func() { AppendLoose(buf[:0], in) }); n != 0 {
		t.Errorf("loosening a key beyond ASCII allocates %v times", n)
	}
}
