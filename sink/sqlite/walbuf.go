//go:build cgo && !windows

package sqlite

// #include <stdint.h>
// int idp_walbuf_install(void);
// void idp_walbuf_counts(int64_t *calls, int64_t *writes);
import "C"

import "sync"

var (
	walOnce sync.Once
	walName string
)

// walVFS returns the name of the VFS that writes the log's frames in large
// writes (walbuf.c), registered on first use, or "" when SQLite refused it
// (the connections then use the default VFS).
func walVFS() string {
	walOnce.Do(func() {
		if C.idp_walbuf_install() == 0 {
			walName = "idemport-wal"
		}
	})
	return walName
}

// walWrites returns the writes SQLite made to the log files closed so far
// and the writes that reached the files beneath for them.
func walWrites() (calls, writes int64) {
	var c, w C.int64_t
	C.idp_walbuf_counts(&c, &w)
	return int64(c), int64(w)
}
