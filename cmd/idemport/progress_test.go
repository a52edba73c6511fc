//go:build !windows

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/idemport/idemport/internal/testkit"
)

// frame is one drawing of the progress bar, as a terminal receives it.
type frame struct {
	at      time.Duration // when the test read it, since the command started
	percent int
	phase   string
	total   string  // "4.6 MB", "400k"
	rate    float64 // per second, in bytes or rows; 0 when not shown
	left    time.Duration
	text    string
}

var frameRE = regexp.MustCompile(`^\s*(\d+)% \|[^|]*\|\s+(.+?): (hash|plan|apply) (.+?)/(.+?)(?: rows)?(?:, ([\d.]+)( [kMGTPE]?B|[kMG]? rows)/s, (\S+) left)?\s*$`)

// ptyRun runs the binary with stderr on a pseudo terminal 200 columns wide
// and returns what it drew there, cut into frames at carriage returns, each
// stamped with the time it was read.
func ptyRun(t *testing.T, dir string, args ...string) (frames []frame, raw string, stdout string) {
	t.Helper()
	cmd := testkit.Cmd(t, dir, nil, args...)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stderr, cmd.Stdout = tty, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	type chunk struct {
		at time.Duration
		b  []byte
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 64<<10)
			n, err := ptmx.Read(b)
			if n > 0 {
				chunks <- chunk{time.Since(start), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	var all strings.Builder
	var pending string
	for c := range chunks {
		all.Write(c.b)
		segs := strings.Split(pending+string(c.b), "\r")
		pending = segs[len(segs)-1]
		for _, s := range segs[:len(segs)-1] {
			if f, ok := parseFrame(t, s); ok {
				f.at = c.at
				frames = append(frames, f)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v under a terminal: %v\n%q", args, err, all.String())
	}
	return frames, all.String(), out.String()
}

func parseFrame(t *testing.T, s string) (frame, bool) {
	t.Helper()
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return frame{}, false
	}
	m := frameRE.FindStringSubmatch(s)
	if m == nil {
		if strings.Contains(s, "%") {
			t.Errorf("a bar frame the test cannot read: %q", s)
		}
		return frame{}, false
	}
	f := frame{phase: m[3], total: m[5], text: s}
	f.percent, _ = strconv.Atoi(m[1])
	if m[6] != "" {
		rate, _ := strconv.ParseFloat(m[6], 64)
		unit := strings.TrimSuffix(strings.TrimSpace(m[7]), "rows")
		f.rate = rate * map[string]float64{"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "": 1, "k": 1e3, "M": 1e6, "G": 1e9}[strings.TrimSpace(unit)]
		left, err := time.ParseDuration(m[8])
		if err != nil {
			t.Errorf("frame %q: time left %q: %v", s, m[8], err)
		}
		f.left = left
	}
	return f, true
}

// TestProgressBarUnderATerminal imports a plain and a gzip file with stderr
// on a pseudo terminal and reads the bar as drawn (and the log lines
// written meanwhile, which must not share its line): it must move through
// hash, plan and apply in that order, each phase's percent only growing
// and reaching 100; hash and plan measure the file as stored (the gzip
// file's compressed size, not its decoded one); and every rate shown must
// be one the phase could have had, within a wide margin: a rate computed
// from a jump at a phase's start over a few microseconds, as "hash 2%
// (865 GB/s)" was, breaks the bound by orders of magnitude.
func TestProgressBarUnderATerminal(t *testing.T) {
	// Not parallel: it checks the rates the bar draws against the time since the command started.
	dir := t.TempDir()
	const rows = 1000000 // the apply outlasts a rate's 250 ms even after an overlap wrote 24 MiB during the plan pass
	testkit.Orders(t, filepath.Join(dir, "big.csv"), rows, 7)
	plain, err := os.ReadFile(filepath.Join(dir, "big.csv"))
	if err != nil {
		t.Fatal(err)
	}
	gz := gzipFile(t, filepath.Join(dir, "big.csv"))
	os.WriteFile(filepath.Join(dir, "big.csv.gz"), gz, 0o644)

	for _, tc := range []struct {
		file  string
		size  int64
		table string
	}{
		{"big.csv", int64(len(plain)), "plain"},
		{"big.csv.gz", int64(len(gz)), "gzipped"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			frames, raw, stdout := ptyRun(t, dir, "import", "--log-level", "info", "--table", tc.table, "--partition-rows", "25000", tc.file)
			if !strings.Contains(stdout, "imported 1000000 rows") {
				t.Fatalf("stdout %q", stdout)
			}
			// A log line written while the bar is drawn starts a line of
			// its own: the bar is erased first.
			logs := regexp.MustCompile(`(.?)time=\S+ level=INFO`).FindAllStringSubmatch(raw, -1)
			if len(logs) == 0 {
				t.Fatalf("no log lines on the terminal:\n%q", raw)
			}
			for _, m := range logs {
				if m[1] != "" && m[1] != "\r" && m[1] != "\n" {
					t.Fatalf("a log line drawn after the bar, on its line:\n%q", raw)
				}
			}
			var phases []string
			last := map[string]frame{}
			rated := 0
			for _, f := range frames {
				prev, seen := last[f.phase]
				switch {
				case len(phases) == 0 || phases[len(phases)-1] != f.phase:
					if seen {
						t.Fatalf("phase %s drawn again after %s:\n%s", f.phase, phases[len(phases)-1], f.text)
					}
					phases = append(phases, f.phase)
				case f.percent < prev.percent:
					t.Fatalf("%s went back from %d%% to %d%%:\n%s\n%s", f.phase, prev.percent, f.percent, prev.text, f.text)
				}
				last[f.phase] = f
				if f.phase != "apply" && f.total != formatBytes(tc.size) {
					t.Fatalf("%s measures %s, want the file's %s as stored:\n%s", f.phase, f.total, formatBytes(tc.size), f.text)
				}
				if f.rate == 0 {
					continue
				}
				rated++
				whole := float64(tc.size)
				if f.phase == "apply" {
					whole = rows
				}
				// A true rate is at most the phase's whole amount over the
				// time it ran, which is less than the time since the command
				// started: far less for a fast phase, so the bound allows
				// 20 times that (a rate is shown only once a phase has run
				// 250 ms). The time the test reads a frame is no measure of
				// when it was drawn on a busy machine, so finer bounds would
				// fail on true rates.
				if bound := 20 * whole / f.at.Seconds(); f.rate > bound {
					t.Fatalf("%s rate %.0f/s is more than 20 times the whole %.0f over the %v since the command started:\n%s", f.phase, f.rate, whole, f.at, f.text)
				}
				// The time left is what remains at that rate.
				remaining := whole * float64(100-f.percent+1) / 100
				if want := time.Duration(remaining / f.rate * float64(time.Second)); f.left > want+time.Second {
					t.Fatalf("%s: %v left at %.0f/s with %d%% done, want at most %v:\n%s", f.phase, f.left, f.rate, f.percent, want, f.text)
				}
			}
			if strings.Join(phases, ",") != "hash,plan,apply" {
				t.Fatalf("phases drawn %v, want hash, plan, apply:\n%q", phases, raw)
			}
			for _, p := range phases {
				if last[p].percent != 100 {
					t.Fatalf("%s ended at %d%%:\n%s", p, last[p].percent, last[p].text)
				}
			}
			if rated == 0 {
				t.Fatalf("no frame showed a rate:\n%q", raw)
			}
		})
	}
}

// TestProgressOnlyOnATerminal checks where no bar may be drawn: stderr on a
// pipe (cron), --progress never, and -q on a terminal. The file is small:
// an enabled bar draws as each phase starts, whatever the file's size, so
// a bar wrongly enabled draws on this one too.
func TestProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.Orders(t, filepath.Join(dir, "big.csv"), 2000, 22)

	piped := testkit.Exec(t, dir, nil, "import", "--table", "again", "--partition-rows", "100", "big.csv")
	if piped.Code != 0 || piped.Stderr != "" {
		t.Fatalf("stderr on a pipe must stay empty: exit %d %q", piped.Code, piped.Stderr)
	}
	never := exec.Command(testkit.Binary(t), "import", "--progress", "never", "--table", "third", "big.csv")
	never.Dir = dir
	if b, err := never.CombinedOutput(); err != nil || bytes.Contains(b, []byte("\r")) {
		t.Fatalf("--progress never: %v %q", err, b)
	}
	for _, args := range [][]string{
		{"import", "-q", "--table", "fourth", "big.csv"},
		{"import", "--progress", "never", "--table", "fifth", "big.csv"},
	} {
		frames, raw, _ := ptyRun(t, dir, args...)
		if len(frames) > 0 || raw != "" {
			t.Fatalf("%v drew on the terminal: %q", args, raw)
		}
	}
	// --progress always draws even with -q.
	if frames, raw, _ := ptyRun(t, dir, "import", "-q", "--progress", "always", "--table", "sixth", "big.csv"); len(frames) == 0 {
		t.Fatalf("-q --progress always drew no bar: %q", raw)
	}
}
