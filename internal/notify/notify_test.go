package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/idemport/idemport/idemtype"
	"github.com/idemport/idemport/internal/testenv"
)

// getenv is the environment of the tests' sinks.
func getenv(name string) string {
	return map[string]string{"HOOK_PATH": "T000/B000/XXXX"}[name]
}

func TestMask(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222/imports", "nats://127.0.0.1:4222/imports"},
		{"nats://user:pa55@host:4222/subj", "nats://user:xxxxx@host:4222/subj"},
		{"nats://s3cr3ttoken@host:4222/subj", "nats://xxxxx@host:4222/subj"},
		{"https://hooks.example.com/x?token=abc&sig=def", "https://hooks.example.com/x?token=xxxxx&sig=xxxxx"},
		{"https://hooks.example.com/services/${HOOK_PATH}?code=c", "https://hooks.example.com/services/${HOOK_PATH}?code=xxxxx"},
		{"https://u:p@h/x", "https://u:xxxxx@h/x"},
		{"exec:notify-dbt", "exec:notify-dbt"},
		{"exec:curl -H 'Authorization: Bearer abc' https://h", "exec:curl …"},
		{"exec:API_TOKEN=s3cr3t notify-dbt", "exec:API_TOKEN=xxxxx notify-dbt"},
		{"exec:A='two words' B=\"x y\" env C=z notify --now", "exec:A=xxxxx B=xxxxx env C=xxxxx notify …"},
	} {
		if got := Mask(c.in); got != c.want {
			t.Errorf("Mask(%q) = %q, want %q", c.in, got, c.want)
		}
		if s, err := Parse(c.in, getenv); err != nil || s.Name() != c.want || len(s.ID()) != 16 {
			t.Errorf("Parse(%q): %v, %v", c.in, s, err)
		}
	}
	for _, bad := range []string{"ftp://h/x", "nats://h:4222", "nats://h:4222/", "exec:", "http://", "webhook:x", "https://h/${UNSET}", "https://u:pw@h/%zz"} {
		if _, err := Parse(bad, getenv); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("Parse(%q): %v", bad, err)
		}
	}
	a, _ := Parse("https://h/x?token=a", getenv)
	b, _ := Parse("https://h/x?token=b", getenv)
	if a.ID() == b.ID() || a.Name() != b.Name() {
		t.Errorf("two tokens: ids %s %s, names %s %s", a.ID(), b.ID(), a.Name(), b.Name())
	}
}

// TestHTTPStatuses: 2xx and 409 delivered, other 4xx permanent, 5xx, 408
// and 429 retried; the key is the event ID; no error shows the token.
func TestHTTPStatuses(t *testing.T) {
	var status int
	var key string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key = r.Header.Get("Idempotency-Key")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	s, err := Parse(srv.URL+"/e?token=s3cr3t", getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status    int
		ok, final bool
	}{{200, true, false}, {202, true, false}, {409, true, false}, {400, false, true}, {404, false, true}, {422, false, true},
		{408, false, false}, {429, false, false}, {500, false, false}, {503, false, false}} {
		status = c.status
		err := s.Deliver(context.Background(), idemtype.EventMessage{ID: "ev-1", Body: []byte(`{}`)})
		if (err == nil) != c.ok || errors.Is(err, idemtype.ErrPermanent) != c.final || errors.Is(err, idemtype.ErrMisconfigured) || key != "ev-1" {
			t.Errorf("status %d: err %v, key %q", c.status, err, key)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("status %d: the error shows the token: %v", c.status, err)
		}
	}
	srv.Close()
	if err := s.Deliver(context.Background(), idemtype.EventMessage{ID: "ev-1"}); err == nil || errors.Is(err, idemtype.ErrPermanent) ||
		errors.Is(err, idemtype.ErrMisconfigured) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("endpoint gone: %v", err)
	}
}

// TestNATSSubjectWithoutStream: a publish no JetStream stream captures
// fails as misconfigured (no try in this pass can succeed), naming the
// subject, and is not refused for good; a server that is not there is
// neither: it may be back at the next try.
func TestNATSSubjectWithoutStream(t *testing.T) {
	t.Parallel()
	const server = "nats://127.0.0.1:4222"
	nc, err := nats.Connect(server, nats.Timeout(3*time.Second))
	if err != nil {
		testenv.Unavailable(t, testenv.NATS, fmt.Sprintf("no NATS JetStream server at %s (%v): start one", server, err))
	}
	nc.Close()
	subject := "idemport.test." + strings.ReplaceAll(uuid.NewString(), "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []struct {
		address       string
		misconfigured bool
		says          string
	}{
		{server + "/" + subject, true, fmt.Sprintf("no JetStream stream captures subject %q", subject)},
		{"nats://127.0.0.1:1/" + subject, false, "connect to nats://127.0.0.1:1/" + subject},
	} {
		s, err := Parse(c.address, getenv)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Deliver(ctx, idemtype.EventMessage{ID: "ev-1", Body: []byte(`{}`)})
		s.Close()
		if err == nil || errors.Is(err, idemtype.ErrMisconfigured) != c.misconfigured || errors.Is(err, idemtype.ErrPermanent) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want an error saying %q, misconfigured %v", c.address, err, c.says, c.misconfigured)
		}
	}
}

func TestExec(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	s, _ := Parse(`exec:{ printf '%s\n' "$IDEMPORT_EVENT_ID"; cat; } > `+out, getenv)
	if err := s.Deliver(context.Background(), idemtype.EventMessage{ID: "ev-9", Body: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "ev-9\n{\"a\":1}\n" { // the event is one newline-terminated line
		t.Fatalf("the command got %q", b)
	}
	fail, _ := Parse("exec:echo no >&2; exit 3", getenv)
	if err := fail.Deliver(context.Background(), idemtype.EventMessage{ID: "x"}); err == nil || errors.Is(err, idemtype.ErrPermanent) ||
		errors.Is(err, idemtype.ErrMisconfigured) || !strings.Contains(err.Error(), "no") {
		t.Fatalf("exit 3: %v", err)
	}
}

// TestPathTokenFromEnvironment: a webhook's token, part of its URL's path,
// is given as ${NAME} and read from the environment: the request goes to
// the full path, while the sink's name, its ID and its errors show
// ${NAME} as written.
func TestPathTokenFromEnvironment(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	s, err := Parse(srv.URL+"/services/${HOOK_PATH}", getenv)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Deliver(context.Background(), idemtype.EventMessage{ID: "e1", Body: []byte("{}")})
	if got != "/services/T000/B000/XXXX" {
		t.Fatalf("delivered to %q", got)
	}
	if !strings.HasSuffix(s.Name(), "/services/${HOOK_PATH}") || err == nil || strings.Contains(err.Error(), "T000") {
		t.Fatalf("name %q, error %v", s.Name(), err)
	}
	other, _ := Parse(srv.URL+"/services/${HOOK_PATH}", func(string) string { return "another token" })
	if other.ID() != s.ID() {
		t.Fatal("a new token made another sink: its events would not be delivered")
	}
}
