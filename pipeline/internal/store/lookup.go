package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// UsageError is a request that is wrong whatever the file holds: a flag
// that names a column the file does not have, an unusable target
// (pipeline.UsageError).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError of the message format makes of args.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Operations returns the current operations of a file (given as a path,
// which is hashed, or as a file ID), or an error when there are none.
func (s *Store) Operations(ctx context.Context, fileOrID string, table string) ([]ledger.Operation, error) {
	if err := s.Present(); err != nil {
		return nil, err
	}
	filters, err := s.FileFilters(ctx, fileOrID, table)
	if err != nil {
		return nil, err
	}
	ops, err := s.ListAll(ctx, filters, s.Ledger.List)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no operation for %s", fileOrID)
	}
	return ops, nil
}

// ListAll lists, with list, the operations matching any of filters.
func (s *Store) ListAll(ctx context.Context, filters []ledger.Filter, list func(context.Context, ledger.Filter) ([]ledger.Operation, error)) ([]ledger.Operation, error) {
	var out []ledger.Operation
	for _, f := range filters {
		ops, err := list(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, ops...)
	}
	return out, nil
}

// FileFilters select the operations of a file given as an existing path
// (by its content digest), as a file ID, as a path the ledger has seen it
// under (moved away since), or as an unambiguous prefix of a file ID, in
// that order.
func (s *Store) FileFilters(ctx context.Context, fileOrID string, table string) ([]ledger.Filter, error) {
	if st, err := os.Stat(fileOrID); err == nil && !st.IsDir() {
		return contentFilters(ctx, fileOrID, table)
	}
	f, ok, err := s.namedFilter(ctx, fileOrID, table)
	if err != nil {
		return nil, err
	}
	if ok {
		return []ledger.Filter{f}, nil
	}
	return s.prefixFilters(ctx, fileOrID, table)
}

// contentFilters returns the filters of the local file at path's content:
// its decoded digest, and its stored bytes' when they differ.
func contentFilters(ctx context.Context, path string, table string) ([]ledger.Filter, error) {
	src, err := reader.OpenFileSource(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	digests, err := reader.Digest(ctx, src, nil)
	if err != nil {
		return nil, err
	}
	filters := []ledger.Filter{{Table: table, Digest: digests.Content}}
	if digests.Stored != digests.Content {
		filters = append(filters, ledger.Filter{Table: table, Digest: digests.Stored})
	}
	return filters, nil
}

// namedFilter returns the first filter that finds operations of fileOrID
// taken as a file ID, a path as given, and that path with its credentials
// masked or cleaned; ok is false when none does.
func (s *Store) namedFilter(ctx context.Context, fileOrID string, table string) (f ledger.Filter, ok bool, err error) {
	byID := ledger.Filter{Table: table, FileID: fileOrID}
	candidates := []ledger.Filter{byID, {Table: table, Path: fileOrID}}
	if remote.IsURL(fileOrID) {
		// A remote input is recorded under its URL, credentials masked.
		candidates = append(candidates, ledger.Filter{Table: table, Path: remote.Redact(fileOrID)})
	} else if clean := filepath.Clean(fileOrID); clean != fileOrID {
		candidates = append(candidates, ledger.Filter{Table: table, Path: clean})
	}
	for _, f := range candidates {
		ops, err := s.matching(ctx, f)
		if err != nil {
			return ledger.Filter{}, false, err
		}
		if len(ops) > 0 {
			return f, true, nil
		}
	}
	return ledger.Filter{}, false, nil
}

// prefixFilters returns the filter of the one file ID that starts with
// fileOrID; several are a usage error naming the first few, and none
// returns the file ID filter, which matches nothing.
func (s *Store) prefixFilters(ctx context.Context, fileOrID string, table string) ([]ledger.Filter, error) {
	byID := ledger.Filter{Table: table, FileID: fileOrID}
	ops, err := s.matching(ctx, ledger.Filter{Table: table, FileIDPrefix: fileOrID})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, op := range ops {
		if !slices.Contains(ids, op.FileID) {
			ids = append(ids, op.FileID)
		}
	}
	switch {
	case len(ids) == 1:
		return []ledger.Filter{{Table: table, FileID: ids[0]}}, nil
	case len(ids) > 1:
		n := len(ids)
		slices.Sort(ids)
		if n > 5 {
			ids = append(ids[:5], "…")
		}
		return nil, Usagef("%s is the start of %d file IDs: %s; give more of it", fileOrID, n, strings.Join(ids, ", "))
	}
	return []ledger.Filter{byID}, nil // matches nothing: the caller says so
}

// matching lists the current and past operations matching f.
func (s *Store) matching(ctx context.Context, f ledger.Filter) ([]ledger.Operation, error) {
	ops, err := s.Ledger.List(ctx, f)
	if err != nil {
		return nil, err
	}
	past, err := s.Ledger.Past(ctx, f)
	return append(ops, past...), err
}
