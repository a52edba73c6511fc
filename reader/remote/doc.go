// Package remote reads objects in S3-compatible storage (s3://BUCKET/KEY)
// and behind HTTP(S) URLs as fixed, random-access byte sources.
//
// An [Object] is pinned at open time to the version a HEAD request saw: its
// size, its ETag (or S3 version id) and its modification time. Every later
// read is a ranged GET guarded by If-Match on that ETag, so bytes of two
// versions are never mixed: an object replaced under a reader fails with an
// error wrapping [reader.ErrSourceChanged]. Every response body is counted
// against the range asked for and the pinned size, whatever its framing
// (206 or a 200 that ignored Range, with a Content-Length or chunked): one
// that holds more or fewer bytes is retried, then fails with
// reader.ErrSourceChanged, and is never taken for the whole. Reads retry with backoff on 5xx
// responses, throttling (429, 503 SlowDown) and broken or truncated bodies,
// resuming at the first byte not yet delivered; a 403 or 404 is a
// [*StatusError] naming the URL, never retried.
//
// [Client.List] expands an s3://BUCKET/PREFIX/ into the keys below it in
// key order. URLs are shown by [Redact], which masks their user
// information and every query value, wherever they appear in output.
//
// The package does not import the rest of the reader: the pipeline composes
// the two.
package remote
