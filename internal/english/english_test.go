package english

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 rows"}, {1, "1 row"}, {2, "2 rows"}, {-1, "-1 rows"}} {
		if got := Plural(c.n, "row"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for word, want := range map[string]string{"event delivery": "2 event deliveries", "key": "2 keys", "day": "2 days"} {
		if got := Plural(2, word); got != want {
			t.Errorf("Plural(2, %q) = %q, want %q", word, got, want)
		}
	}
}

func TestVerb(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "are"}, {1, "is"}, {2, "are"}} {
		if got := Verb(c.n, "is", "are"); got != c.want {
			t.Errorf("Verb(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
