package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/secret"
)

// Parse returns the sink for address: nats://HOST:PORT/SUBJECT (JetStream,
// waiting for the publish acknowledgement), http:// or https://… (POST),
// or exec:COMMAND (run by /bin/sh with the event on stdin).
//
// In a nats:// or http(s):// address, ${NAME} is replaced by the value of
// the environment variable NAME, which getenv returns, when the sink
// delivers: a token that is part of a URL's path (a webhook's) is given so,
// and is then neither in the command line nor in anything shown or stored.
// A variable that is empty or not set is an error. The sink's ID is a
// digest of the address as given, and its Name the address as given with
// its secrets masked (Mask), ${NAME} included as written.
func Parse(address string, getenv func(string) string) (idemtype.EventSink, error) {
	sum := sha256.Sum256([]byte(address))
	id := hex.EncodeToString(sum[:8])
	name := Mask(address)
	if strings.HasPrefix(address, "exec:") {
		cmd := strings.TrimSpace(strings.TrimPrefix(address, "exec:"))
		if cmd == "" {
			return nil, fmt.Errorf("notify %s: exec: names no command", name)
		}
		return &execSink{id: id, cmd: cmd}, nil
	}
	if !strings.HasPrefix(address, "nats://") && !strings.HasPrefix(address, "http://") && !strings.HasPrefix(address, "https://") {
		return nil, fmt.Errorf("notify %s: want nats://HOST:PORT/SUBJECT, http(s)://… or exec:COMMAND", name)
	}
	full, err := expand(address, getenv)
	if err != nil {
		return nil, fmt.Errorf("notify %s: %w", name, err)
	}
	u, err := url.Parse(full)
	if err != nil {
		return nil, fmt.Errorf("notify %s: %w", name, secret.ParseError(err))
	}
	secrets := secret.Parts(full, false)
	if u.Scheme == "nats" {
		subject := strings.TrimPrefix(u.Path, "/")
		if subject == "" || u.Host == "" {
			return nil, fmt.Errorf("notify %s: want nats://HOST:PORT/SUBJECT", name)
		}
		server := *u
		server.Path, server.RawQuery = "", ""
		return &natsSink{id: id, name: name, server: server.String(), subject: subject, secrets: secrets}, nil
	}
	if u.Host == "" {
		return nil, fmt.Errorf("notify %s: not a URL", name)
	}
	return &httpSink{id: id, name: name, url: full, secrets: secrets, client: &http.Client{}}, nil
}

// envRef is a reference to an environment variable in an address,
// compiled on first use, not at start (as is assignment): most runs of
// the command have no event sink.
var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// expand replaces each ${NAME} of address by the value getenv gives NAME.
func expand(address string, getenv func(string) string) (string, error) {
	var missing []string
	out := envRef().ReplaceAllStringFunc(address, func(ref string) string {
		name := envRef().FindStringSubmatch(ref)[1]
		v := ""
		if getenv != nil {
			v = getenv(name)
		}
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("the environment variable %s it names is empty or not set", strings.Join(missing, ", "))
	}
	return out, nil
}

// Mask returns address with its secrets hidden: for a URL, as
// secret.URL does (the password of its user information, a user given
// alone, every query value); for an exec: command, the values of the
// environment assignments that lead it (TOKEN=… cmd, env TOKEN=… cmd) and
// its arguments, leaving the program.
func Mask(address string) string {
	if rest, ok := strings.CutPrefix(address, "exec:"); ok {
		return "exec:" + maskCommand(rest)
	}
	if !strings.Contains(address, "://") { // not an address: its form only
		if scheme, _, ok := strings.Cut(address, ":"); ok && !strings.ContainsAny(scheme, " /") {
			return scheme + ":…"
		}
		return "…"
	}
	return secret.URL(address)
}

// assignment is a shell word that assigns an environment variable.
var assignment = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) })

// maskCommand shows a shell command by its leading assignments, with their
// values masked, and its program; the rest is "…".
func maskCommand(cmd string) string {
	words := shellWords(cmd)
	var out []string
	for i, w := range words {
		if name := assignment().FindString(w); name != "" {
			out = append(out, name+secret.Mask)
			continue
		}
		out = append(out, w)
		if w == "env" { // env NAME=… program
			continue
		}
		if i < len(words)-1 {
			out = append(out, "…")
		}
		break
	}
	return strings.Join(out, " ")
}

// shellWords splits a shell command into its words as the shell would
// before expansions: at unquoted blanks, with quotes and backslashes kept
// in the words. It is enough to tell where a word ends.
func shellWords(cmd string) []string {
	var words []string
	var w strings.Builder
	in := false // inside a word
	quote := byte(0)
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(cmd) {
				w.WriteByte(c)
				i++
				c = cmd[i]
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\' && i+1 < len(cmd):
			w.WriteByte(c)
			i++
			c = cmd[i]
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
			continue
		}
		w.WriteByte(c)
		in = true
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

type natsSink struct {
	id, name, server, subject string
	secrets                   []string // of its address, scrubbed from errors

	mu sync.Mutex
	nc *nats.Conn
	js jetstream.JetStream
}

func (s *natsSink) ID() string   { return s.id }
func (s *natsSink) Name() string { return s.name }

// Deliver publishes m to JetStream with Nats-Msg-Id = m.ID and waits for the
// stream's acknowledgement; a duplicate within the stream's duplicate window
// is acknowledged without being stored again.
func (s *natsSink) Deliver(ctx context.Context, m idemtype.EventMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc == nil || s.nc.IsClosed() {
		opts := []nats.Option{nats.Name("idemport"), nats.MaxReconnects(0)}
		if d, ok := ctx.Deadline(); ok {
			opts = append(opts, nats.Timeout(max(time.Until(d), time.Millisecond)))
		}
		nc, err := nats.Connect(s.server, opts...)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", s.name, secret.ScrubError(err, s.secrets))
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return fmt.Errorf("jetstream at %s: %w", s.name, err)
		}
		s.nc, s.js = nc, js
	}
	if _, err := s.js.Publish(ctx, s.subject, m.Body, jetstream.WithMsgID(m.ID)); err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			// Nothing answered: no stream's subjects include this one (a
			// plain NATS publish would be lost without a word). Trying
			// again before someone adds a stream cannot help.
			return misconfigured{fmt.Errorf("publish to %s: no JetStream stream captures subject %q: add it to a stream's subjects (for example nats stream add EVENTS --subjects %q); the event stays in the outbox, for idemport outbox deliver or the next run once a stream does", s.name, s.subject, s.subject)}
		}
		return fmt.Errorf("publish to %s: %w", s.name, err)
	}
	return nil
}

func (s *natsSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	return nil
}

// misconfigured is an error of a sink that cannot take any event until it
// is set up otherwise: it reads as err, and is idemtype.ErrMisconfigured.
type misconfigured struct{ err error }

func (e misconfigured) Error() string   { return e.err.Error() }
func (e misconfigured) Unwrap() []error { return []error{e.err, idemtype.ErrMisconfigured} }

type httpSink struct {
	id, name, url string
	secrets       []string // of url, scrubbed from errors
	client        *http.Client
}

func (s *httpSink) ID() string   { return s.id }
func (s *httpSink) Name() string { return s.name }

// Deliver POSTs m.Body as JSON with Idempotency-Key = m.ID. 2xx and 409
// (the endpoint already has this key) are delivered; another 4xx is
// permanent; 5xx, timeouts and connection errors may be tried again.
func (s *httpSink) Deliver(ctx context.Context, m idemtype.EventMessage) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(m.Body))
	if err != nil {
		return fmt.Errorf("post to %s: %w", s.name, secret.ParseError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", m.ID)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, secrets and all
		}
		return fmt.Errorf("post to %s: %w", s.name, secret.ScrubError(err, s.secrets))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300, c == http.StatusConflict:
		return nil
	case c >= 400 && c < 500 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests:
		return fmt.Errorf("post to %s: %s: %s: %w", s.name, resp.Status, strings.TrimSpace(string(body)), idemtype.ErrPermanent)
	default:
		return fmt.Errorf("post to %s: %s: %s", s.name, resp.Status, strings.TrimSpace(string(body)))
	}
}

func (s *httpSink) Close() error { s.client.CloseIdleConnections(); return nil }

type execSink struct {
	id, cmd string
}

func (s *execSink) ID() string   { return s.id }
func (s *execSink) Name() string { return Mask("exec:" + s.cmd) }

// Deliver runs the command with /bin/sh -c, the event on its stdin as one
// line of JSON (newline-terminated, so line-reading tools such as read and
// jq see a complete line) and IDEMPORT_EVENT_ID set; exit status 0 is
// delivered, any other is tried again.
func (s *execSink) Deliver(ctx context.Context, m idemtype.EventMessage) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", s.cmd)
	body := m.Body
	if !bytes.HasSuffix(body, []byte("\n")) {
		body = append(body[:len(body):len(body)], '\n')
	}
	cmd.Stdin = bytes.NewReader(body)
	cmd.Env = append(os.Environ(), "IDEMPORT_EVENT_ID="+m.ID)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		return fmt.Errorf("run %s: %w: %s", s.Name(), err, msg)
	}
	return nil
}

func (s *execSink) Close() error { return nil }
