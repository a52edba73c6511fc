//go:build cgo && linux

package sqlite

// #include <stdint.h>
// int64_t idp_region_used(void);
import "C"

// regionUsed returns the bytes that SQLite's page cache has taken from the
// region of huge pages reserved for it (pagemem.c), or -1 when there is no
// region.
func regionUsed() int64 { return int64(C.idp_region_used()) }
