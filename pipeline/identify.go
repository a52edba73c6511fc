package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idemport/idemport/checkpoint"
	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/ledger"
	"github.com/idemport/idemport/pipeline/internal/store"
	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// identifier is the identify stage of one input: what it reads (the
// store, the request, the input it opens) and, for an import, how it
// starts the plan pass on the hash's read. identify returns what it found.
type identifier struct {
	st  *store.Store
	req Request
	in  *input
	// plan starts the plan pass on the bytes sr hashes (see speculate);
	// nil: the file is hashed alone, as dry runs and verify read it once.
	plan func(ctx context.Context, sr *reader.HashRead, content bool) *speculation
	// begin starts the overlap's transaction beside the rest of the
	// stage and the claim (holding.beginEarly) once plan has started the
	// pass; nil: it does not. What it returned is early.
	begin func(ctx context.Context, sp *speculation, size int64) *early
	early *early
}

// identifier returns the run's identify stage: an import's plans while it
// hashes.
func (r *run) identifier() *identifier {
	s := &identifier{st: r.e.st, req: r.req, in: r.in}
	if r.sharesRead {
		s.plan = r.planner().speculate
		s.begin = r.beginEarly
	}
	return s
}

// name is what the input is known by (see holding.name).
func (s *identifier) name() string {
	return inputName(s.in, &s.req)
}

// identity is what the identify stage finds a file to be: the operation it
// is imported under and the digests that say so. identify returns it; the
// claim, plan and apply stages read it (the claim only completes id.ReadAs,
// see readAs).
type identity struct {
	id      ledger.Identity
	op      checkpoint.Op
	stat    ledger.FileStat // the quick check's key: size and time (and path, inode) of the file as identify saw it
	digests reader.Digests  // the file's, whatever identity it is imported under
	quick   bool            // the digests came from the quick check, not from hashing
	// recorded: the quick check already records digests for stat, as they
	// are (a rehash that confirmed them), so the claim has nothing to
	// remember and the run need not write to the ledger.
	recorded bool
}

// tooYoungError stops a run whose file is too recently modified
// (--min-age): the outcome is Skipped, its text the note that says why.
type tooYoungError struct {
	age, minAge time.Duration
}

func (e *tooYoungError) Error() string {
	return fmt.Sprintf("modified %s ago, less than --min-age %s: it may still be being written; a later run imports it",
		e.age.Round(time.Second), e.minAge)
}

// located is what identify learns of the file before hashing it.
type located struct {
	size    int64
	modTime time.Time
	stat    ledger.FileStat
	format  reader.Format
	comp    reader.Compression
}

// identify finds the file, hashes it (or takes its digests from the quick
// check) and computes the operation's fingerprint. It opens the input, and
// with plan set starts the plan pass on the hash's read: that pass is
// returned, even with an error, for the caller to use or stop.
func (s *identifier) identify(ctx context.Context) (identity, *speculation, error) {
	if err := s.req.Mapping.Check(); err != nil {
		return identity{}, nil, err
	}
	if _, _, err := s.st.Driver.Limits().SplitTable(s.req.Mapping.Table); err != nil {
		return identity{}, nil, &UsageError{Err: err}
	}
	if s.req.Replace && (s.req.FileID == "" || strings.Contains(s.req.FileID, "{digest}")) {
		return identity{}, nil, usagef("--replace needs a --file-id that names the file, such as --file-id '{path}' or '{name}': a file known by its content (the default) has no other version to replace")
	}
	if err := s.req.checkSpillDirs(); err != nil {
		return identity{}, nil, err
	}
	at, err := s.locate(ctx)
	if err != nil {
		return identity{}, nil, err
	}
	if age, young := s.tooYoung(at.modTime); young {
		return identity{}, nil, &tooYoungError{age: age, minAge: s.req.MinAge}
	}
	if err := s.openSpool(at.comp); err != nil {
		return identity{}, nil, err
	}
	h, err := s.hash(ctx, at)
	if err != nil {
		return identity{}, h.spec, err
	}
	id, err := s.fingerprint(ctx, at, h.digests)
	if err != nil {
		return identity{}, h.spec, err
	}
	return identity{id: id, op: checkpoint.Op{Table: id.Key.Table, FileID: id.Key.FileID}, stat: at.stat, digests: h.digests, quick: h.quick, recorded: h.recorded}, h.spec, nil
}

// locate finds the file and its format: a stream is spooled (it cannot be
// read twice), a remote object asked for, a local file stat'ed.
func (s *identifier) locate(ctx context.Context) (located, error) {
	var at located
	m := s.req.Mapping
	switch {
	case s.in.streaming:
		// Its name, not its bytes, says its format: asked before the
		// stream is read, which cannot be read twice.
		if _, _, err := reader.Detect(s.name()); err != nil && m.Format == "" {
			return at, usagef("reading a stream (%s) needs --format, or a --name with the format's extension, such as orders.csv", s.req.Path)
		}
		if err := s.spoolStream(ctx); err != nil {
			return at, err
		}
		at.size = s.in.stream.Size
	case s.in.url != "":
		obj, err := s.openRemote(ctx)
		if err != nil {
			return at, err
		}
		at.size, at.modTime = obj.Size(), obj.ModTime()
		at.stat = ledger.FileStat{Size: at.size, MtimeNs: at.modTime.UnixNano()} // no path: the remote quick check is keyed by URL
	default:
		// A missing file or directory is said as such before its name is
		// read for a format.
		st, err := os.Stat(s.req.Path)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return at, pe.Err // the result names the path
		} else if err != nil {
			return at, err
		}
		if st.IsDir() {
			return at, usagef("%s is a directory", s.req.Path)
		}
		host, _ := os.Hostname()
		at.size, at.modTime, at.stat = st.Size(), st.ModTime(), fileStat(host, s.req.Path, st)
	}
	format, comp, err := reader.Detect(formatName(s.name()))
	if m.Format != "" {
		format, err = m.Format, nil
	}
	if err != nil {
		return at, &UsageError{Err: err}
	}
	at.format, at.comp = format, comp
	return at, nil
}

// openSpool makes a spooled copy of a remote object the run's source, when
// Request.SpoolDir asks for one.
func (s *identifier) openSpool(comp reader.Compression) error {
	if s.in.obj == nil || s.req.SpoolDir == "" {
		return nil
	}
	sp, err := remote.NewSpool(s.in.obj, s.req.SpoolDir)
	if errors.Is(err, remote.ErrSpoolDir) {
		return &UsageError{Err: err} // the user's to fix: a rerun meets it again
	} else if err != nil {
		return err
	}
	if comp == reader.None {
		// Partitions are byte ranges: an attempt that does not hash
		// the object (it resumes) fetches the ranges it applies.
		sp.ReadThrough()
	}
	sp.Failpoints(s.st.Hit)
	s.in.spool, s.in.src = sp, sp
	return nil
}

// hashed is what hash found: the file's digests, whether the quick check
// gave them or recorded them as they are (see identity.recorded), and the
// plan pass started on the hash's read, if any.
type hashed struct {
	digests  reader.Digests
	quick    bool
	recorded bool
	spec     *speculation
}

// hash returns the file's digests and whether the quick check gave them.
// A remote object is hashed from a stream that fills its spooled copy,
// which the plan pass and the partitions then read: one download.
func (s *identifier) hash(ctx context.Context, at located) (hashed, error) {
	var d reader.Digests
	src, err := s.in.source()
	if err != nil {
		return hashed{}, err
	}
	hashSrc := src
	if s.in.spool != nil {
		hashSrc = s.in.spool.Copying()
	}
	// known: the quick check knows the local file as it is (uncompressed:
	// a compressed one is known again by the hash of its bytes alone), so
	// a rehash (--rehash) most likely finds a duplicate, which needs no
	// plan pass: it hashes alone, and a file that turns out to be new
	// after all is planned after its hash, on a second read.
	// A state still being created (store.Store.Migrating) was found
	// without tables: it holds no quick check, and the hash starts while
	// the migrations run.
	known := false
	var recorded reader.Digests // as the quick check's row holds them
	if s.st.DB != nil && !s.st.Migrating() && !s.in.streaming && (!s.req.Rehash || (s.in.obj == nil && at.comp == reader.None)) {
		if d.Stored, d.Content, err = s.knownDigests(ctx, at.stat); err != nil {
			return hashed{digests: d}, err
		}
		recorded = d
		if d.Content == "" && at.comp == reader.None {
			d.Content = d.Stored // recorded by an older version: the same for uncompressed files
		}
		if d.Content != "" && !s.req.Rehash {
			return hashed{digests: d, quick: true}, nil
		}
		known, d = d.Content != "", reader.Digests{}
	}
	compressed := at.comp != reader.None
	var spec *speculation
	switch {
	case s.in.streaming:
		d.Stored, d.Content = s.in.stream.Digest, s.in.stream.Digest
		if compressed {
			d, err = reader.Digest(ctx, src, nil)
		}
	case s.plan != nil && !known && (isTextFormat(s.req.Mapping.Format, s.name()) || (s.in.obj == nil && !compressed)):
		d, spec, err = s.hashAndPlan(ctx, src, hashSrc, at)
	default:
		d, err = reader.Digest(ctx, hashSrc, func(n int64) {
			s.req.progress(Progress{Phase: "hash", Bytes: n, TotalBytes: at.size})
		})
	}
	// A rehash that finds the digests the quick check's row holds for this
	// very stat leaves the row as it is; one recorded by an older version,
	// without the content digest, is completed.
	return hashed{digests: d, spec: spec, recorded: known && err == nil && d == recorded}, err
}

// hashAndPlan hashes and plans on one read: the plan pass follows the
// hash, and for a compressed file hashes the data it decodes. A local
// Parquet or Arrow file is read by random access, not from the hash's
// bytes, but is planned while it is hashed all the same. It returns the
// plan pass it started.
func (s *identifier) hashAndPlan(ctx context.Context, src, hashSrc idemtype.Source, at located) (reader.Digests, *speculation, error) {
	var d reader.Digests
	sr, err := reader.StartHashRead(ctx, hashSrc, func(n int64) {
		s.req.progress(Progress{Phase: "hash", Bytes: n, TotalBytes: at.size})
	})
	if err != nil {
		return d, nil, err
	}
	compressed := at.comp != reader.None
	spec := s.plan(ctx, sr, compressed)
	if s.begin != nil {
		s.early = s.begin(ctx, spec, at.size)
	}
	if d.Stored, err = sr.Digest(); err != nil {
		return d, spec, err
	}
	if s.st.DB != nil {
		spec.waitDescribed(ctx)
	}
	d.Content = d.Stored
	if !compressed {
		return d, spec, nil
	}
	if s.st.DB != nil {
		if err := s.st.Ready(ctx); err != nil {
			return d, spec, err
		}
		// Bytes hashed before (another path, or --rehash) need not
		// wait for the plan pass to be decoded.
		if d.Content, err = s.st.Ledger.ContentOf(ctx, s.st.DB, d.Stored); err != nil || d.Content != "" {
			return d, spec, err
		}
	}
	d.Content = d.Stored
	content, ok, err := spec.content()
	switch {
	case err != nil:
		return d, spec, err
	case !ok: // the plan pass did not run: hash on its own
		d, err = reader.Digest(ctx, src, nil)
		return d, spec, err
	case content != "":
		d.Content = content
	}
	return d, spec, nil
}

// fingerprint is the ledger identity of a file with digests d: its file
// ID (see FileID and legacyIdentity), content and mapping.
func (s *identifier) fingerprint(ctx context.Context, at located, d reader.Digests) (ledger.Identity, error) {
	m := s.req.Mapping
	digest := d.Content
	fileID := FileID(s.req.FileID, s.name(), digest)
	if fileID == "" {
		fileID = digest
	}
	if s.st.DB != nil {
		// Everything from here on reads or writes idemport's tables.
		if err := s.st.Ready(ctx); err != nil {
			return ledger.Identity{}, err
		}
		var err error
		if fileID, digest, err = s.legacyIdentity(ctx, m.Table, fileID, d); err != nil {
			return ledger.Identity{}, err
		}
	}
	mapping, mdigest, equivalent := m.identity(at.format)
	return ledger.Identity{
		Key:           ledger.Key{Table: m.Table, FileID: fileID},
		FileKey:       FileKey(fileID),
		ContentDigest: digest,
		MappingDigest: mdigest,
		Mapping:       mapping,
		Equivalent:    equivalent,
		Path:          s.name(),
		Size:          at.size,
	}, nil
}

// identity returns the canonical text of m for a file of format, its
// digest, and the digests of the mappings that mean the same to an
// operation made by an older version.
func (m Mapping) identity(format reader.Format) (mapping, digest string, equivalent []string) {
	delim := m.Delimiter
	if delim == 0 {
		delim = ','
		if format == reader.TSV {
			delim = '\t'
		}
	}
	quotes := format == reader.CSV || m.Quotes
	mapping, digest = m.canonical(MappingVersion, format, delim, quotes)
	// A file imported under mapping version 1 keeps its identity.
	_, v1 := m.canonical(1, format, delim, quotes)
	equivalent = []string{v1}
	// The mapping with its snapshot scope spelt unescaped, as operations
	// made before scopes were escaped stored it, means the same.
	if s := m.Snapshot; s != nil && s.legacyScopeText() != s.ScopeText() {
		old := m
		old.Snapshot = &Snapshot{Soft: s.Soft, Scope: s.Scope, legacy: true}
		for _, v := range []int{MappingVersion, 1} {
			_, d := old.canonical(v, format, delim, quotes)
			equivalent = append(equivalent, d)
		}
	}
	return mapping, digest, equivalent
}

// legacyIdentity returns the file ID and content digest the file is
// imported under. Older versions identified a compressed file by the digest
// of its bytes as stored. When the ledger holds an operation of this table
// that recorded such a digest — this file's stored digest (under the file
// ID given, or as the file ID), or under the default file ID, the stored
// digest of any file the quick check saw decode to this file's data — the
// run takes that operation's identity, so the same data is a duplicate (or
// resumes) instead of being imported again.
func (s *identifier) legacyIdentity(ctx context.Context, table, fileID string, d reader.Digests) (string, string, error) {
	content, stored := d.Content, d.Stored
	op, err := s.st.Ledger.Find(ctx, s.st.DB, ledger.Key{Table: table, FileID: fileID})
	if err != nil {
		return "", "", err
	}
	if op != nil || s.req.FileID != "" {
		if op != nil && stored != content && op.ContentDigest == stored {
			return fileID, stored, nil
		}
		return fileID, content, nil
	}
	candidates, err := s.st.Ledger.StoredOf(ctx, s.st.DB, content)
	if err != nil {
		return "", "", err
	}
	if stored != content {
		candidates = append([]string{stored}, candidates...)
	}
	for _, c := range candidates {
		op, err := s.st.Ledger.Find(ctx, s.st.DB, ledger.Key{Table: table, FileID: c})
		if err != nil {
			return "", "", err
		}
		if op != nil && op.ContentDigest == c {
			return c, c, nil
		}
	}
	return fileID, content, nil
}

// openRemote makes the HEAD request for the input's URL and keeps the
// object as the input's source. An object the client's listing named (an s3://
// prefix expanded) with an ETag and size the quick check knows needs no
// HEAD request: the listing proves it unchanged since it was imported, as
// a HEAD request would, and the object is pinned at what the listing said
// (reads, if any, are guarded by that ETag). --rehash always asks.
func (s *identifier) openRemote(ctx context.Context) (*remote.Object, error) {
	c := s.req.Remote
	if c == nil {
		c = remote.New(remote.Options{})
	}
	in := s.in
	in.objCtx = ctx
	if info, ok := c.Listed(in.url); ok && info.Proves() && !s.req.Rehash && s.st.DB != nil && !s.st.Migrating() {
		obj, err := c.Pin(ctx, in.url, info)
		if err != nil {
			return nil, err
		}
		in.obj = obj
		_, content, err := s.knownDigests(ctx, ledger.FileStat{})
		if err != nil {
			return nil, err
		}
		if content != "" {
			in.src = obj
			return obj, nil
		}
		in.obj = nil
	}
	obj, err := c.Open(ctx, in.url)
	if err != nil {
		return nil, err
	}
	in.obj, in.src = obj, obj
	return obj, nil
}

// knownDigests returns the digests the quick check recorded for the run's
// input, local or remote; stat is a local file's.
func (s *identifier) knownDigests(ctx context.Context, stat ledger.FileStat) (stored, content string, err error) {
	if s.in.obj != nil {
		return s.st.Ledger.KnownRemote(ctx, s.st.DB, s.in.remoteStat())
	}
	return s.st.Ledger.KnownDigest(ctx, s.st.DB, stat)
}

// tooYoung says whether an object modified at mod is too young for
// --min-age; an object without Last-Modified is taken as old enough.
func (s *identifier) tooYoung(mod time.Time) (time.Duration, bool) {
	if s.req.MinAge <= 0 || mod.IsZero() {
		return 0, false
	}
	age := time.Since(mod)
	return age, age < s.req.MinAge
}

// spoolStream copies the stream into a private file while hashing it, and
// makes that file the run's source, known by the stream's name.
func (s *identifier) spoolStream(ctx context.Context) error {
	in := s.req.Stdin
	if s.req.Path != "-" {
		f, err := os.Open(s.req.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	} else if in == nil {
		in = eof{}
	}
	dir := s.req.SpoolDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "idemport-"+strconv.Itoa(os.Getuid()))
	}
	sp, err := remote.SpoolStream(ctx, in, dir, func(n int64) { s.req.progress(Progress{Phase: "hash", Bytes: n}) })
	if err != nil {
		return err
	}
	s.in.stream = sp
	src, err := reader.OpenFileSource(sp.Path)
	if err != nil {
		return err
	}
	s.in.src = named{Source: src, name: s.req.Name}
	return nil
}
