package pipeline

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/url"
	"time"

	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// A remote input (an s3:// or http(s):// URL) is read through a
// remote.Object pinned at the version its HEAD request saw: every later
// read is a ranged GET guarded by its ETag, so an attempt never mixes two
// versions. Its identity is cached by URL, ETag, version id and size, so a
// rerun of an imported object costs one HEAD request, when the HEAD can
// prove the bytes unchanged (a strong ETag or a version id); otherwise a
// rerun reads and hashes the object.

// newRun returns the run of req. A URL's credentials stay in the run's
// url, for its requests; its Path, which results, logs and the ledger
// show, has them masked.
func newRun(e *Engine, req Request) *run {
	r := &run{e: e, req: req}
	if remote.IsURL(req.Path) {
		r.url, r.req.Path = req.Path, remote.Redact(req.Path)
	}
	return r
}

// openRemote makes the HEAD request for the run's URL and keeps the object
// as the run's source. An object the client's listing named (an s3://
// prefix expanded) with an ETag and size the quick check knows needs no
// HEAD request: the listing proves it unchanged since it was imported, as
// a HEAD request would, and the object is pinned at what the listing said
// (reads, if any, are guarded by that ETag). --rehash always asks.
func (r *run) openRemote(ctx context.Context) (*remote.Object, error) {
	c := r.req.Remote
	if c == nil {
		c = remote.New(remote.Options{})
		r.req.Remote = c
	}
	r.objCtx = ctx
	if info, ok := c.Listed(r.url); ok && info.Proves() && !r.req.Rehash && r.e.st.DB != nil {
		obj, err := c.Pin(ctx, r.url, info)
		if err != nil {
			return nil, err
		}
		r.obj = obj
		_, content, err := r.knownDigests(ctx, ledger.FileStat{})
		if err != nil {
			return nil, err
		}
		if content != "" {
			r.src = obj
			return obj, nil
		}
		r.obj = nil
	}
	obj, err := c.Open(ctx, r.url)
	if err != nil {
		return nil, err
	}
	r.obj, r.src = obj, obj
	return obj, nil
}

// remoteStat is the remote quick check's key for the run's object. An
// object whose HEAD proves nothing (no version id, no strong ETag), or
// whose masked URL does not name it alone (its query says which object it
// is, and query values are masked), gets a key without validators, which
// the quick check never trusts: it is read and hashed on every run.
func (r *run) remoteStat() ledger.RemoteStat {
	i := r.obj.Info()
	if !i.Proves() || !r.obj.NamedByPath() {
		return ledger.RemoteStat{URL: r.req.Path, Size: i.Size}
	}
	return ledger.RemoteStat{URL: r.req.Path, ETag: i.ETag, Version: i.Version, Size: i.Size}
}

// knownDigests returns the digests the quick check recorded for the run's
// input, local or remote; stat is a local file's.
func (r *run) knownDigests(ctx context.Context, stat ledger.FileStat) (stored, content string, err error) {
	if r.obj != nil {
		return r.e.st.Ledger.KnownRemote(ctx, r.e.st.DB, r.remoteStat())
	}
	return r.e.st.Ledger.KnownDigest(ctx, r.e.st.DB, stat)
}

// rememberDigests records the run's digests for the quick check of its
// input, local or remote.
func (r *run) rememberDigests(ctx context.Context, q ledger.Querier) error {
	switch {
	case r.obj != nil:
		return r.e.st.Ledger.RememberRemote(ctx, q, r.remoteStat(), r.digests.Stored, r.digests.Content)
	case r.stat.Path != "":
		return r.e.st.Ledger.RememberDigest(ctx, q, r.stat, r.digests.Stored, r.digests.Content)
	}
	return nil
}

// checkRemote fails with an error wrapping reader.ErrSourceChanged when the
// run's object is no longer the version it was opened at (one HEAD
// request).
func (r *run) checkRemote() error {
	return r.obj.Check(r.objCtx)
}

// formatName is the name a run's input is told its format by: a URL's path
// without its query (a presigned URL ends in its signature).
func formatName(path string) string {
	if !remote.IsURL(path) {
		return path
	}
	if u, err := url.Parse(path); err == nil {
		return u.Path
	}
	return path
}

// tooYoung says whether an object modified at mod is too young for
// --min-age; an object without Last-Modified is taken as old enough.
func (r *run) tooYoung(mod time.Time) (time.Duration, bool) {
	if r.req.MinAge <= 0 || mod.IsZero() {
		return 0, false
	}
	age := time.Since(mod)
	return age, age < r.req.MinAge
}

// namesColumns reports whether the mapping names any of the file's
// columns (types, key, version, snapshot scope), which preflight checks.
func (m Mapping) namesColumns() bool {
	return len(m.Columns) > 0 || len(m.Key) > 0 || m.Version != "" || (m.Snapshot != nil && len(m.Snapshot.Scope) > 0) ||
		len(m.Names) > 0 || len(m.Select) > 0 || len(m.Rename) > 0
}

// logFetched logs what reading the run's remote input took, as a warning
// when requests had to be retried.
func (r *run) logFetched() {
	if r.obj == nil {
		return
	}
	log := r.log // names the file, operation and attempt
	if log == nil {
		log = r.e.st.Log.With("file", r.req.Path)
	}
	requests, bytes, retries := r.obj.Fetched()
	level := slog.LevelInfo
	if retries > 0 { // the store failed requests: worth a look even when the import succeeded
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "fetched", "requests", requests, "bytes", bytes, "retries", retries)
}

// fillSpool completes the run's spooled copy before a plan pass that
// shares no hash's read: an import that knows its object from the quick
// check but has no plan stored yet (an earlier attempt stopped between
// its claim and its plan) would otherwise fetch the object for the plan
// pass and each partition's range again after it. The copy an earlier
// attempt left is read as far as its sums check, and only the rest is
// fetched. When the copy cannot be completed for want of room, the import
// goes on reading the object, with a warning, as it does without a spool.
func (r *run) fillSpool(ctx context.Context) error {
	if r.spool == nil || !r.sharesRead {
		return nil
	}
	err := r.spool.Fill(ctx)
	var pe *fs.PathError // the copy's file, not the object
	if err == nil || ctx.Err() != nil || errors.Is(err, reader.ErrSourceChanged) || !errors.As(err, &pe) {
		return err
	}
	r.e.st.Log.Warn("could not complete the spooled copy of the object; the plan pass and the partitions read the object", "file", r.req.Path, "error", err)
	return nil
}

// settleSpool removes the run's spooled copy once the operation needs it no
// more; after a failure or an interrupt it stays, for the next attempt to
// resume.
func (r *run) settleSpool() {
	if r.spool == nil {
		return
	}
	if err := r.spool.GaveUp(); err != nil { // the import read the object instead, as without a spool
		r.e.st.Log.Warn("could not copy the object into the spool directory; its partitions were fetched again", "file", r.req.Path, "error", err)
	}
	switch r.res.Outcome {
	case Failed, Interrupted, Busy:
		r.spool.Close()
	default:
		if err := r.spool.Remove(); err != nil {
			r.e.st.Log.Warn("remove spooled copy", "file", r.req.Path, "path", r.spool.Path(), "error", err)
		}
	}
}
