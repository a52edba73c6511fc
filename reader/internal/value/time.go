package value

import "bytes"

// hasZone reports whether the timestamp text b ends in a zone: Z or an
// offset after its time of day.
func hasZone(b []byte) bool {
	if len(b) <= 19 {
		return false
	}
	last := b[len(b)-1]
	if last == 'Z' || last == 'z' {
		return true
	}
	rest := b[19:]
	return bytes.IndexByte(rest, '+') >= 0 || bytes.IndexByte(rest, '-') >= 0
}

// two reads the two digits b[0] and b[1], without a loop: the fields of a
// timestamp are read for every timestamp of every row.
func two(b []byte) (int, bool) {
	_ = b[1]
	d0, d1 := b[0]-'0', b[1]-'0'
	return int(d0)*10 + int(d1), d0 <= 9 && d1 <= 9
}

// ParseTimestamp reads YYYY-MM-DD[(T| )HH:MM:SS[.fraction]][Z|±HH:MM|±HHMM]
// into microseconds since the Unix epoch, UTC. A value without a zone is
// UTC. A date alone is accepted only when dateOnly is true (midnight UTC).
// A fraction finer than a microsecond must be zeros.
func ParseTimestamp(b []byte, dateOnly bool) (int64, bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	century, ok0 := two(b[0:2])
	year, ok1 := two(b[2:4])
	year += century * 100
	month, ok2 := two(b[5:7])
	day, ok3 := two(b[8:10])
	if !ok0 || !ok1 || !ok2 || !ok3 || month < 1 || month > 12 || day < 1 || day > 31 {
		return 0, false
	}
	var hour, minute, sec, micro int
	offset := 0
	rest := b[10:]
	if len(rest) == 0 {
		if !dateOnly {
			return 0, false
		}
	} else {
		if len(rest) < 9 || (rest[0] != 'T' && rest[0] != ' ' && rest[0] != 't') || rest[3] != ':' || rest[6] != ':' {
			return 0, false
		}
		var ok4, ok5, ok6 bool
		hour, ok4 = two(rest[1:3])
		minute, ok5 = two(rest[4:6])
		sec, ok6 = two(rest[7:9])
		if !ok4 || !ok5 || !ok6 || hour > 23 || minute > 59 || sec > 59 {
			return 0, false
		}
		rest = rest[9:]
		if len(rest) > 0 && rest[0] == '.' {
			i := 1
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				if i <= 6 {
					micro = micro*10 + int(rest[i]-'0')
				} else if rest[i] != '0' {
					return 0, false
				}
				i++
			}
			if i == 1 {
				return 0, false
			}
			for n := i; n <= 6; n++ {
				micro *= 10
			}
			rest = rest[i:]
		}
		switch {
		case len(rest) == 0:
		case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':',
			len(rest) == 5 && (rest[0] == '+' || rest[0] == '-'):
			hh, okh := two(rest[1:3])
			mm, okm := two(rest[len(rest)-2:])
			if !okh || !okm || hh > 23 || mm > 59 {
				return 0, false
			}
			offset = hh*3600 + mm*60
			if rest[0] == '-' {
				offset = -offset
			}
		default:
			return 0, false
		}
	}
	if day > daysIn(year, month) { // 2025-02-30
		return 0, false
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return (secs-int64(offset))*1e6 + int64(micro), true
}

// dateFields reads b as ParseTimestamp(b, true) reads a date alone,
// YYYY-MM-DD, and reports whether it is one: without the time of day and
// the microseconds a date has none of, which the date columns' checks and
// conversions would pay on every value (ParseTimestamp's result is
// daysFromCivil(year, month, day) days).
func dateFields(b []byte) (year, month, day int, ok bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, 0, 0, false
	}
	century, ok0 := two(b[0:2])
	yy, ok1 := two(b[2:4])
	month, ok2 := two(b[5:7])
	day, ok3 := two(b[8:10])
	year = century*100 + yy
	ok = ok0 && ok1 && ok2 && ok3 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month)
	return year, month, day, ok
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm), without time.Date's normalisation,
// which the plan pass would pay for every timestamp it reads.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
