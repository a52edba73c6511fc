package sink

import (
	"fmt"
	"strings"
)

// SplitTable reads a target table name as every statement of a driver
// whose Limits().QualifiedNames is set names it: table or schema.table
// (on MariaDB, database.table), split at a dot outside quotes. A part may
// be quoted with one of the characters of quotes (a doubled one inside
// stands for itself), so that "a.b" is one name holding a dot; quoting
// does not otherwise change a part, the drivers quote every name they
// write. schema is "" for an unqualified name. A name with more than two
// parts, an empty part or an unclosed quote is refused, naming --table
// and the name, rather than read as some other table.
func SplitTable(name, quotes string) (schema, table string, err error) {
	var parts []string
	var cur strings.Builder
	var quote byte
	empty := true // cur holds nothing and was not quoted
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case quote != 0 && c == quote && i+1 < len(name) && name[i+1] == quote:
			cur.WriteByte(c)
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case strings.IndexByte(quotes, c) >= 0:
			quote, empty = c, false
		case c == '.':
			if empty && cur.Len() == 0 {
				return "", "", badTable(name, "a part is empty")
			}
			parts = append(parts, cur.String())
			cur.Reset()
			empty = true
		default:
			cur.WriteByte(c)
		}
	}
	switch {
	case quote != 0:
		return "", "", badTable(name, fmt.Sprintf("its quote %c is not closed", quote))
	case empty && cur.Len() == 0:
		return "", "", badTable(name, "a part is empty")
	case len(parts) > 1:
		return "", "", badTable(name, fmt.Sprintf("it has %d parts", len(parts)+1))
	case len(parts) == 1:
		return parts[0], cur.String(), nil
	}
	return "", cur.String(), nil
}

func badTable(name, why string) error {
	return fmt.Errorf("--table %s: %s; a table name is table or schema.table, and a part that holds a dot is quoted (\"a.b\")", name, why)
}

// SplitTable reads name as the database names tables (the package
// function SplitTable, with the driver's NameQuotes), or, where names
// are not qualified, as one table name.
func (l Limits) SplitTable(name string) (schema, table string, err error) {
	if !l.QualifiedNames {
		return "", name, nil
	}
	return SplitTable(name, l.NameQuotes)
}

// JoinTable is the name of table in schema ("" for unqualified) as
// SplitTable reads it back, both parts as given: a part is quoted when it
// holds a dot or a quote (where the driver has quotes). Left unquoted, a
// table named a"b" in schema s read back as s.ab, another table.
func (l Limits) JoinTable(schema, table string) string {
	if !l.QualifiedNames {
		return table
	}
	quote := func(part string) string {
		if l.NameQuotes == "" || !strings.ContainsAny(part, "."+l.NameQuotes) {
			return part
		}
		qc := l.NameQuotes[:1]
		return qc + strings.ReplaceAll(part, qc, qc+qc) + qc
	}
	if schema == "" {
		return quote(table)
	}
	return quote(schema) + "." + quote(table)
}
