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
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemport/idemport/idemtype"
)

// Parse returns the sink for address: nats://HOST:PORT/SUBJECT (JetStream,
// waiting for the publish acknowledgement), http:// or https://… (POST),
// or exec:COMMAND (run by /bin/sh with the event on stdin).
func Parse(address string) (idemtype.EventSink, error) {
	sum := sha256.Sum256([]byte(address))
	id := hex.EncodeToString(sum[:8])
	switch {
	case strings.HasPrefix(address, "exec:"):
		cmd := strings.TrimSpace(strings.TrimPrefix(address, "exec:"))
		if cmd == "" {
			return nil, fmt.Errorf("notify %q: exec: names no command", address)
		}
		return &execSink{id: id, cmd: cmd}, nil
	case strings.HasPrefix(address, "nats://"):
		u, err := url.Parse(address)
		if err != nil {
			return nil, fmt.Errorf("notify %s: %w", Mask(address), err)
		}
		subject := strings.TrimPrefix(u.Path, "/")
		if subject == "" || u.Host == "" {
			return nil, fmt.Errorf("notify %s: want nats://HOST:PORT/SUBJECT", Mask(address))
		}
		server := *u
		server.Path, server.RawQuery = "", ""
		return &natsSink{id: id, name: Mask(address), server: server.String(), subject: subject}, nil
	case strings.HasPrefix(address, "http://"), strings.HasPrefix(address, "https://"):
		u, err := url.Parse(address)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("notify %s: not a URL", Mask(address))
		}
		return &httpSink{id: id, name: Mask(address), url: address, client: &http.Client{}}, nil
	}
	return nil, fmt.Errorf("notify %s: want nats://HOST:PORT/SUBJECT, http(s)://… or exec:COMMAND", Mask(address))
}

// Mask returns address with its secrets hidden: the password of its user
// information and every query value of a URL, and the arguments of an
// exec: command (which may carry tokens), leaving the program.
func Mask(address string) string {
	if rest, ok := strings.CutPrefix(address, "exec:"); ok {
		f := strings.Fields(rest)
		if len(f) <= 1 {
			return address
		}
		return "exec:" + f[0] + " …"
	}
	u, err := url.Parse(address)
	if err != nil {
		if i := strings.Index(address, "://"); i > 0 {
			return address[:i+3] + "…"
		}
		return "…"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx") // a lone token as user
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

type natsSink struct {
	id, name, server, subject string

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
			return fmt.Errorf("connect to %s: %w", s.name, err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return fmt.Errorf("jetstream at %s: %w", s.name, err)
		}
		s.nc, s.js = nc, js
	}
	if _, err := s.js.Publish(ctx, s.subject, m.Body, jetstream.WithMsgID(m.ID)); err != nil {
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

type httpSink struct {
	id, name, url string
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
		return fmt.Errorf("post to %s: %w", s.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", m.ID)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, secrets and all
		}
		return fmt.Errorf("post to %s: %w", s.name, err)
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

// Deliver runs the command with /bin/sh -c, the event on its stdin and
// IDEMPORT_EVENT_ID set; exit status 0 is delivered, any other is tried
// again.
func (s *execSink) Deliver(ctx context.Context, m idemtype.EventMessage) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", s.cmd)
	cmd.Stdin = bytes.NewReader(m.Body)
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
