package value

import "testing"

// TestLimitTime: a timestamp key is what its column stores: PostgreSQL's
// timestamp(p) rounds half away from its epoch, 2000-01-01 (a half
// second before it rounds to the past, after it to the future); MariaDB's
// DATETIME(p) truncates the fraction (towards the past, before 1970 too).
func TestLimitTime(t *testing.T) {
	const s = 1000000
	y2k := int64(946684800) * s
	round, trunc, milli := &Limit{TimeUnit: s}, &Limit{TimeUnit: s, TimeTruncates: true}, &Limit{TimeUnit: 1000}
	for _, c := range []struct {
		l        *Limit
		us, want int64
	}{
		{round, y2k + 600000, y2k + s},
		{round, y2k + 500000, y2k + s},
		{round, y2k + 499999, y2k},
		{round, y2k - 500000, y2k - s},
		{round, y2k - 499999, y2k},
		{round, -500000, -s},
		{round, 500000, 0}, // 1970 is before 2000: half rounds to the past
		{milli, y2k + 1500, y2k + 2000},
		{trunc, y2k + 999999, y2k},
		{trunc, -1, -s},
		{nil, 123, 123},
		{&Limit{}, 123, 123},
	} {
		if got := c.l.Time(c.us); got != c.want {
			t.Errorf("%+v.Time(%d) = %d, want %d", c.l, c.us, got, c.want)
		}
	}
}
