package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemport/idemport/internal/testenv"
	"github.com/idemport/idemport/internal/testkit"
)

// TestDurationsTakeDays gives every duration flag of import a number of
// days, as --min-age and gc take them: each is accepted and the import
// runs; a --lease of 0d is refused as not positive.
func TestDurationsTakeDays(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		rows := testkit.Orders(t, filepath.Join(dir, "orders.csv"), 30, 81)
		res := importTo(t, tg, dir, nil, 0, "--wait", "1d", "--lease", "1d", "--busy-timeout", "1d12h", "--notify-timeout", "2d", "orders.csv")
		if res.Outcome != "imported" {
			t.Fatalf("%+v", res)
		}
		checkExact(t, tg, "ordinal", rows)
		if r := tg.Exec(t, dir, nil, "import", "--lease", "0d", "orders.csv"); r.Code != exitUsage || !strings.Contains(r.Stderr, "--lease must be positive") {
			t.Fatalf("--lease 0d: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := tg.Exec(t, dir, nil, "import", "--busy-timeout", "1x", "orders.csv"); r.Code != exitUsage || !strings.Contains(r.Stderr, `invalid argument "1x" for "--busy-timeout" flag: want a duration such as 30s, 10m, 36h or 90d`) {
			t.Fatalf("--busy-timeout 1x: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// TestParseDuration reads durations with and without days.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"0": 0, "0s": 0, "90s": 90 * time.Second, "1d": 24 * time.Hour, "1d12h": 36 * time.Hour, "7d30m": 7*24*time.Hour + 30*time.Minute,
	} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "1.5d", "-1d", "1d-1h", "soon", "1w"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}

// TestExecSinkWritesLines delivers the events of two imports to an exec:
// sink that appends its standard input to a file: the file is JSON Lines,
// one event per newline-terminated line, as `while read` and jq -c read it.
func TestExecSinkWritesLines(t *testing.T) {
	t.Parallel()
	testkit.Each(t, func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "a.csv"), 20, 82)
		testkit.Orders(t, filepath.Join(dir, "b.csv"), 20, 83)
		out := filepath.Join(dir, "events.jsonl")
		notify := []string{"--notify", "exec:cat >> " + out}
		a := importTo(t, tg, dir, nil, 0, append(notify, "--table", "orders", "a.csv")...)
		b := importTo(t, tg, dir, nil, 0, append(notify, "--table", "orders", "b.csv")...)
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(data, []byte("\n")) {
			t.Fatalf("the last event is not newline-terminated: %q", data)
		}
		var ids []string
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev struct {
				AttemptID string `json:"attempt_id"`
				Kind      string `json:"kind"`
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Kind != "import.completed" {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			ids = append(ids, ev.AttemptID)
		}
		if len(ids) != 2 || ids[0] != a.AttemptID || ids[1] != b.AttemptID {
			t.Fatalf("events of attempts %v, want %s then %s:\n%s", ids, a.AttemptID, b.AttemptID, data)
		}
	})
}

// TestJetStreamSubjectWithoutStream notifies a NATS subject no JetStream
// stream captures, with the default --notify-timeout: the import succeeds
// and says so, naming the subject, instead of a bare "no response from
// stream", after one try (its publish, which JetStream's client repeats
// twice 250 ms apart), not after 30 s of tries more could not mend; the
// event stays pending with that one try. Once a stream captures the
// subject, outbox deliver delivers the event, once.
func TestJetStreamSubjectWithoutStream(t *testing.T) {
	t.Parallel()
	testkit.EachOf(t, testkit.AllTargetNames(), func(t *testing.T, name string) {
		dir := t.TempDir()
		tg := testkit.NewTarget(t, name, dir)
		testkit.Orders(t, filepath.Join(dir, "orders.csv"), 20, 84)
		nc, err := nats.Connect(natsURL, nats.Timeout(3*time.Second))
		if err != nil {
			testenv.Unavailable(t, testenv.NATS, fmt.Sprintf("no NATS JetStream server at %s (%v): start one", natsURL, err))
		}
		t.Cleanup(nc.Close)
		id := strings.ReplaceAll(uuid.NewString(), "-", "")
		subject := "idemport.test." + id
		notify := []string{"--notify", natsURL + "/" + subject}
		r := tg.Exec(t, dir, nil, append([]string{"import", "orders.csv"}, notify...)...)
		if r.Code != 0 || !strings.Contains(r.Stderr, fmt.Sprintf("no JetStream stream captures subject %q", subject)) {
			t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		got := testkit.Query(t, tg.DB, `SELECT state, tries FROM `+tg.Ledger("outbox_deliveries"))
		if fmt.Sprint(got) != "[[pending 1]]" {
			t.Fatalf("deliveries (state, tries) after the import: %v; want one pending, tried once", got)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "IDEMPORT_TEST_" + id, Subjects: []string{subject}, Storage: jetstream.MemoryStorage})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { js.DeleteStream(context.Background(), "IDEMPORT_TEST_"+id) })
		if r := tg.Exec(t, dir, nil, append([]string{"outbox", "deliver"}, notify...)...); r.Code != 0 {
			t.Fatalf("outbox deliver: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		events := outboxEvents(t, tg)
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || info.State.Msgs != 1 {
			t.Fatalf("%d events, %d messages in the stream; want 1 and 1", len(events), info.State.Msgs)
		}
		m, err := stream.GetMsg(ctx, info.State.FirstSeq)
		if err != nil || m.Header.Get("Nats-Msg-Id") != events[0].ID {
			t.Fatalf("message %v, %v; want the event %s", m, err, events[0].ID)
		}
	})
}

// TestVersionPrintsTheCommit checks that the binary built from this
// checkout as the README says prints the checkout's commit with --version:
// in a clone, go install -buildvcs=true ./cmd/idemport (here go build)
// stamps it, marked -dirty when the checkout has changes not committed,
// whatever GOFLAGS says; Go does not look for a git worktree's repository
// (its .git is a file), where the README's -ldflags form stamps it. The
// binary is the one every test runs: testkit builds it that way (goBuild),
// so this test links no binary of its own.
func TestVersionPrintsTheCommit(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test needs git: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("this test runs from a git checkout: %v", err)
	}
	want := strings.TrimSpace(string(head))
	if st, err := os.Stat(filepath.Join(root, ".git")); err == nil && st.IsDir() {
		if status, err := exec.Command(git, "-C", root, "status", "--porcelain").Output(); err != nil {
			t.Fatal(err)
		} else if len(bytes.TrimSpace(status)) > 0 {
			want += "-dirty"
		}
	}
	bin := testkit.Binary(t)
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(out), "(commit "+want+", ") {
		t.Fatalf("--version: %q, %v; want commit %s", out, err, want)
	}
	// Without version control information it says how to get it.
	if got := formatVersion(&debug.BuildInfo{}, "", "go1"); !strings.Contains(got, "commit unknown: built without version control information") {
		t.Fatalf("without vcs: %q", got)
	}
	if got := formatVersion(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "", "go1"); got != "idemport (devel) (commit abc-dirty, go1)" {
		t.Fatalf("dirty: %q", got)
	}
}
