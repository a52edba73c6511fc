package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// input is what a run imports: a local file, a stream, or a remote object,
// and the bytes it is read from. newInput makes it from the path a request
// names; the identify stage opens it (locate, openSpool, spoolStream) and
// the claim, plan and apply stages read it. It is used by one run; close
// releases what it opened.
type input struct {
	// path is the input as results, logs and the ledger show it: a URL
	// with its credentials masked.
	path string
	// url is a remote input's URL as given (it may hold credentials), for
	// its requests; empty for a local file or a stream.
	url string
	// streaming is true when path is a stream (see IsStream), read once.
	streaming bool
	// stream is a stream's private copy, once spooled.
	stream *remote.Stream
	// obj is a remote input, pinned at the version identify saw.
	obj *remote.Object
	// objCtx is the context obj was opened with, for its checks.
	objCtx context.Context
	// spool is obj's local copy, when the request names a spool directory.
	spool *remote.Spool
	// src is the input's bytes, once opened.
	src idemtype.Source
}

// newInput returns the unopened input at path (see Request.Path).
func newInput(path string) *input {
	in := &input{path: path, streaming: IsStream(path)}
	if remote.IsURL(path) {
		in.url, in.path = path, remote.Redact(path)
	}
	return in
}

// source returns the input's bytes, opening a local file on first use.
func (in *input) source() (idemtype.Source, error) {
	if in.src == nil {
		src, err := reader.OpenFileSource(in.path)
		if err != nil {
			return nil, err
		}
		in.src = src
	}
	return in.src, nil
}

// open opens the input's bytes for reading with opts.
func (in *input) open(opts reader.Options) (*reader.File, error) {
	src, err := in.source()
	if err != nil {
		return nil, err
	}
	return reader.Open(src, opts)
}

// check fails with an error wrapping reader.ErrSourceChanged when the
// input is no longer as identify found it: a remote object's version (one
// HEAD request), a local file's stat (stat: what identify saw). A stream's
// private copy, which nothing else writes, always checks out. A local
// file fails it with another size, modification or change time, or
// another inode (appended, truncated or replaced). It is called after the
// plan pass and before each partition commits (a pinned input: before the
// completing transaction instead); each partition's bytes are also checked
// against the plan as they are read.
func (in *input) check(stat ledger.FileStat) error {
	switch {
	case in.obj != nil:
		return in.obj.Check(in.objCtx)
	case in.stream != nil:
		return nil
	}
	st, err := os.Stat(in.path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", reader.ErrSourceChanged, in.path, err)
	}
	now := fileStat(stat.Host, in.path, st)
	if now != stat {
		return fmt.Errorf("%w: %s is no longer as it was when this run began (size %d, now %d; modified %s, now %s)",
			reader.ErrSourceChanged, in.path, stat.Size, now.Size,
			time.Unix(0, stat.MtimeNs).UTC().Format(time.RFC3339Nano), time.Unix(0, now.MtimeNs).UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// pinned reports whether the input is a remote object whose HEAD proved
// its version (a version id or a strong ETag): every read of it is of that
// version whatever happens to the object meanwhile, a ranged GET guarded
// by it or a read of its copy checked against the sums recorded while the
// copy was written. Its partitions commit without a check (a HEAD request
// each: a rerun of 10 partitions from the copy made 10 and fetched
// nothing), and the attempt checks it once before its completing
// transaction, so that an object replaced while it is imported still
// stops the attempt with "source changed" (abandoned: in ordinal mode the
// rows it committed are removed), as after the plan pass.
func (in *input) pinned() bool {
	return in.obj != nil && in.obj.Info().Proves()
}

// remoteStat is the remote quick check's key for the input's object. An
// object whose HEAD proves nothing (no version id, no strong ETag), or
// whose masked URL does not name it alone (its query says which object it
// is, and query values are masked), gets a key without validators, which
// the quick check never trusts: it is read and hashed on every run.
func (in *input) remoteStat() ledger.RemoteStat {
	i := in.obj.Info()
	if !i.Proves() || !in.obj.NamedByPath() {
		return ledger.RemoteStat{URL: in.path, Size: i.Size}
	}
	return ledger.RemoteStat{URL: in.path, ETag: i.ETag, Version: i.Version, Size: i.Size}
}

// logFetched logs, to log, what reading a remote input took, as a warning
// when requests had to be retried.
func (in *input) logFetched(log *slog.Logger) {
	if in.obj == nil {
		return
	}
	requests, bytes, retries := in.obj.Fetched()
	level := slog.LevelInfo
	if retries > 0 { // the store failed requests: worth a look even when the import succeeded
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "fetched", "requests", requests, "bytes", bytes, "retries", retries)
}

// fillSpool completes the spooled copy before a plan pass that shares no
// hash's read: an import that knows its object from the quick check but
// has no plan stored yet (an earlier attempt stopped between its claim and
// its plan) would otherwise fetch the object for the plan pass and each
// partition's range again after it. The copy an earlier attempt left is
// read as far as its sums check, and only the rest is fetched. When the
// copy cannot be completed for want of room, the import goes on reading
// the object, with a warning to log, as it does without a spool.
func (in *input) fillSpool(ctx context.Context, log *slog.Logger) error {
	if in.spool == nil {
		return nil
	}
	err := in.spool.Fill(ctx)
	var pe *fs.PathError // the copy's file, not the object
	if err == nil || ctx.Err() != nil || errors.Is(err, reader.ErrSourceChanged) || !errors.As(err, &pe) {
		return err
	}
	log.Warn("could not complete the spooled copy of the object; the plan pass and the partitions read the object", "file", in.path, "error", err)
	return nil
}

// settleSpool removes the spooled copy once the operation needs it no
// more (keep false); after a failure or an interrupt (keep) it stays, for
// the next attempt to resume.
func (in *input) settleSpool(keep bool, log *slog.Logger) {
	if in.spool == nil {
		return
	}
	if err := in.spool.GaveUp(); err != nil { // the import read the object instead, as without a spool
		log.Warn("could not copy the object into the spool directory; its partitions were fetched again", "file", in.path, "error", err)
	}
	if keep {
		in.spool.Close()
	} else if err := in.spool.Remove(); err != nil {
		log.Warn("remove spooled copy", "file", in.path, "path", in.spool.Path(), "error", err)
	}
}

// close closes the input's bytes, if they were opened, and removes a
// stream's private copy (the stream is gone with the run), warning log
// when it cannot. Nothing that read the input is used afterwards.
func (in *input) close(log *slog.Logger) {
	if in.src != nil {
		in.src.Close() // everything read from it is in hand: a failed close loses nothing
		in.src = nil
	}
	if in.stream != nil {
		if err := in.stream.Remove(); err != nil {
			log.Warn("could not remove the copy of the stream", "path", in.stream.Path, "err", err)
		}
		in.stream = nil
	}
}
