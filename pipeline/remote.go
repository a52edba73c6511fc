package pipeline

import (
	"context"
	"net/url"

	"github.com/idemport/idemport/ledger"
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
// input, for its requests; its Path, which results, logs and the ledger
// show, has them masked.
func newRun(e *Engine, req Request) *run {
	r := &run{holding: holding{e: e, req: req, in: newInput(req.Path), ap: &applying{}}}
	r.req.Path = r.in.path
	return r
}

// rememberDigests records the run's digests for the quick check of its
// input, local or remote.
func (cl *claimer) rememberDigests(ctx context.Context, q ledger.Querier) error {
	switch {
	case cl.in.obj != nil:
		return cl.e.st.Ledger.RememberRemote(ctx, q, cl.in.remoteStat(), cl.digests.Stored, cl.digests.Content)
	case cl.stat.Path != "":
		return cl.e.st.Ledger.RememberDigest(ctx, q, cl.stat, cl.digests.Stored, cl.digests.Content)
	}
	return nil
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

// namesColumns reports whether the mapping names any of the file's
// columns (types, key, version, snapshot scope), which preflight checks.
func (m Mapping) namesColumns() bool {
	return len(m.Columns) > 0 || len(m.Key) > 0 || m.Version != "" || (m.Snapshot != nil && len(m.Snapshot.Scope) > 0) ||
		len(m.Names) > 0 || len(m.Select) > 0 || len(m.Rename) > 0
}

// logFetched logs what reading the run's remote input took (see
// input.logFetched), naming the file, and the operation and attempt when
// it got that far.
func (r *run) logFetched() {
	log := r.log
	if log == nil {
		log = r.e.st.Log.With("file", r.req.Path)
	}
	r.in.logFetched(log)
}

// fillSpool completes the input's spooled copy before a plan pass that
// shares no hash's read (see input.fillSpool); a dry run or verify, which
// reads the file once, leaves it as it is.
func (pl *planner) fillSpool(ctx context.Context) error {
	if !pl.sharesRead {
		return nil
	}
	return pl.in.fillSpool(ctx, pl.e.st.Log)
}
