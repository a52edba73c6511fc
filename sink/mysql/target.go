package mysql

import (
	"github.com/idemport/idemport/sink"
)

// Limits implements sink.Driver: at most 1,017 columns in an InnoDB table,
// of which the lineage columns take 2; names of at most 64 bytes; a dotted
// name is database.table; column names fold case; a key's index holds
// 3,072 bytes, 4 for each character of text (keyBytes, charBytes); a key
// column is not widened (Widen).
func (Driver) Limits() sink.Limits {
	return sink.Limits{MaxColumns: 1017, Reserved: 2, MaxNameBytes: 64, QualifiedNames: true, NameQuotes: nameQuotes, FoldsCase: true,
		KeyBytes: keyBytes, CharBytes: charBytes, Rules: valueRules, DDLCommits: true, FixedKeys: true}
}
