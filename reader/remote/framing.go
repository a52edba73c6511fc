package remote

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/idemport/idemport/reader"
)

// A response body is held to what was asked for, whatever its framing: a
// server may ignore Range and send the whole object (200), answer with a
// range (206), give a Content-Length or none (chunked, or a body ended by
// closing the connection). A body with no length could end early, or run
// on past the size the HEAD request pinned, without net/http noticing; a
// prefix of the object, or an object cut at a size that a lying HEAD gave,
// would then pass for the whole. So every body is counted: one that holds
// fewer or more bytes than its framing and the pinned size say is an error
// wrapping reader.ErrSourceChanged, retried like a broken response (a proxy
// may have cut it) and final once the retries are spent.

// framed serves the bytes [off, end) of the object from a response body
// that holds the object's bytes [first, after), and checks the body's
// length when its range is done, before handing over its last bytes.
type framed struct {
	rc      io.ReadCloser
	shown   string
	off     int64 // object offset of the next byte
	end     int64 // the range served ends here
	after   int64 // the body's bytes end here, by its framing
	whole   bool  // a 200: the body holds the whole object
	counted bool  // the body has no length: its end is read to count it
	size    int64 // the size the object was opened at
}

// frame returns a reader of the bytes [off, end) of the object of size
// bytes from a response body holding its bytes [first, after); length is
// the response's Content-Length, -1 when it has none. It reads and
// discards the bytes before off. A Content-Length that disagrees with the
// range is refused at once.
func frame(rc io.ReadCloser, shown string, off, end, first, after, length, size int64) (io.ReadCloser, error) {
	f := &framed{rc: rc, shown: shown, off: first, end: min(end, after), after: after, whole: first == 0 && after == size, counted: length < 0, size: size}
	if length >= 0 && length != after-first {
		rc.Close()
		if f.whole {
			return nil, f.changed(fmt.Sprintf("is now %d bytes, was %d", length, size))
		}
		return nil, f.changed(fmt.Sprintf("sent %d bytes for the range %d-%d", length, first, after-1))
	}
	if off > first {
		n, err := io.CopyN(io.Discard, rc, off-first)
		f.off += n
		if err != nil {
			rc.Close()
			return nil, f.broken(err)
		}
	}
	return f, nil
}

// extend makes a response that holds the whole object (a server that
// ignored Range) serve up to to, rather than only the window it was asked
// for, so that a stream does not ask again for bytes this response holds.
// It returns where the range served now ends.
func (f *framed) extend(to int64) int64 {
	if f.whole && to > f.end {
		f.end = min(to, f.after)
	}
	return f.end
}

func (f *framed) Read(p []byte) (int, error) {
	if f.off >= f.end {
		return 0, io.EOF
	}
	if rest := f.end - f.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := f.rc.Read(p)
	if f.off+int64(n) >= f.end {
		// The range is done: the body must end where its framing says
		// before its last bytes are handed over.
		if err := f.checkEnd(); err != nil {
			return 0, err
		}
		f.off += int64(n)
		return n, nil
	}
	f.off += int64(n)
	if err != nil {
		return n, f.broken(err)
	}
	return n, nil
}

// checkEnd checks that a body without a length holds exactly the bytes its
// framing says after the range served, as many as that and no more.
func (f *framed) checkEnd() error {
	if !f.counted {
		return nil // net/http holds the body to its Content-Length
	}
	want := f.after - f.end
	n, err := io.CopyN(io.Discard, f.rc, want+1)
	switch {
	case err != nil && err != io.EOF:
		return retryable{fmt.Errorf("%s: read at byte %d: %w", f.shown, f.end+n, err)}
	case n > want && f.whole:
		return f.changed(fmt.Sprintf("sent more than the %d bytes it was opened at", f.size))
	case n > want:
		return f.changed(fmt.Sprintf("sent more than the range %d-%d it was asked for", f.end-1, f.after-1))
	case n < want:
		return f.changed(fmt.Sprintf("sent %d bytes, then ended, before the %d its framing promised", f.end+n, f.after))
	}
	return nil
}

// broken classifies a body that failed or ended early at f.off.
func (f *framed) broken(err error) error {
	if err == io.EOF { // a clean end, before the bytes its framing promised
		return f.changed(fmt.Sprintf("sent %d bytes, then ended, before the %d its framing promised", f.off, f.after))
	}
	return retryable{fmt.Errorf("%s: read at byte %d: %w", f.shown, f.off, err)}
}

// changed is a body that disagrees with the object opened: retried, then
// final, as source changed.
func (f *framed) changed(what string) error {
	return retryable{fmt.Errorf("%w: %s %s (opened at %d bytes)", reader.ErrSourceChanged, f.shown, what, f.size)}
}

func (f *framed) Close() error { return f.rc.Close() }

// contentRange parses "bytes FIRST-LAST/TOTAL" (TOTAL may be "*", then -1).
func contentRange(s string) (first, last, total int64, ok bool) {
	s, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2 error
	first, err1 = strconv.ParseInt(a, 10, 64)
	last, err2 = strconv.ParseInt(b, 10, 64)
	if err := errors.Join(err1, err2); err != nil || first < 0 || last < first {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		var err error
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total <= last {
			return 0, 0, 0, false
		}
	}
	return first, last, total, true
}
