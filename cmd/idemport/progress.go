package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/idemport/idemport/pipeline"
)

// progressUI draws one progress bar on stderr for the file being imported:
// the bar moves through the phases the import goes through (hash, plan,
// apply), each from where it stands to 100%, with the phase's rate and the
// time it has left. It draws only when enabled: stderr is a terminal (or
// --progress always), so cron logs never get a bar or a carriage return.
//
// Rates are measured here, from the reports' values and the time they
// arrive, as the average since the phase's first report: a phase that
// begins part done (a plan pass that ran while the file was hashed, a
// resumed apply) counts only what moved since, so a jump never shows as
// a speed.
type progressUI struct {
	w       io.Writer
	enabled bool
	width   func() int // the terminal's columns

	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	phase string
	file  string
	index int
	total int
	max   int64     // the phase's total
	value int64     // the phase's value drawn last
	base  int64     // the phase's value at its first report
	start time.Time // when the phase's first report arrived
	drawn time.Time // when the bar was last drawn
	shown int       // the width of the line drawn last
	barW  int       // the bar's width in columns, fitted to the terminal
}

const (
	redrawEvery = 100 * time.Millisecond
	// minRateSpan is how long a phase must have run before its rate is
	// shown: over less, a few reports' worth of work says nothing.
	minRateSpan = 250 * time.Millisecond
)

// phaseRank orders the phases, so that a late report of an earlier phase
// never takes the bar back; it is 0 for a phase the bar does not know.
func phaseRank(phase string) int {
	switch phase {
	case "hash":
		return 1
	case "plan":
		return 2
	case "apply":
		return 3
	}
	return 0
}

// newProgressUI decides whether to draw: mode is auto, always or never.
func newProgressUI(w io.Writer, mode string) (*progressUI, error) {
	u := &progressUI{w: w, width: func() int { return 80 }}
	f, isFile := w.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	switch mode {
	case "never":
	case "always":
		u.enabled = true
	case "auto":
		u.enabled = tty
	default:
		return nil, usageError{fmt.Errorf("--progress %q: want auto, always or never", mode)}
	}
	if tty {
		u.width = func() int {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
			return 80
		}
	}
	return u, nil
}

// startFile announces the index-th (1-based) of total files.
func (u *progressUI) startFile(index, total int, path string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.index, u.total, u.file, u.phase = index, total, filepath.Base(path), ""
}

// update is the pipeline's progress callback; it may be called from any
// goroutine.
func (u *progressUI) update(p pipeline.Progress) {
	if !u.enabled {
		return
	}
	value, total := p.Bytes, p.TotalBytes
	if p.Phase == "apply" {
		value, total = p.Rows, p.TotalRows
	}
	if total <= 0 || phaseRank(p.Phase) == 0 {
		return // nothing to measure against
	}
	value = min(value, total)
	u.mu.Lock()
	defer u.mu.Unlock()
	now := time.Now()
	switch {
	case phaseRank(p.Phase) < phaseRank(u.phase):
		return
	case p.Phase != u.phase:
		u.newBar(p.Phase, total, value, now)
	case value <= u.value:
		return // workers' reports may arrive out of order
	case value == u.max || now.Sub(u.drawn) >= redrawEvery:
	default:
		return
	}
	u.drawn, u.value = now, value
	u.bar.Set64(value)
	u.bar.Describe(u.describe(value, now))
	u.draw()
}

// draw writes the bar's last rendering over the line. The bar renders to
// nothing itself: each of its calls renders, and a frame with the new
// percent and the old description would show numbers that disagree.
func (u *progressUI) draw() {
	line := strings.TrimRight(strings.TrimPrefix(u.bar.String(), "\r"), " ")
	n := utf8.RuneCountInString(line)
	fmt.Fprintf(u.w, "\r%s%*s", line, max(u.shown-n, 0), "")
	u.shown = n
}

// newBar replaces the bar with one for phase, starting at value.
func (u *progressUI) newBar(phase string, total, value int64, now time.Time) {
	u.erase()
	u.phase, u.max, u.base, u.start = phase, total, value, now
	// The bar takes what the longest description leaves, 10 to 30 columns.
	u.barW = min(max(u.width()-1-9-len(": ")-descWidth-utf8.RuneCountInString(u.name()), 10), 30)
	u.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetDescription(u.describe(value, now)),
		progressbar.OptionSetWriter(io.Discard),
		progressbar.OptionThrottle(0), // throttled in update
		progressbar.OptionSetWidth(u.barW),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionShowDescriptionAtLineEnd(),
	)
}

// descWidth is the most columns a description takes besides the file's
// name: "apply 999k/999k rows, 999k rows/s, 59m59s left".
const descWidth = 48

// describe says, after the bar, which file and phase it is, how far, how
// fast and how long is left: "orders.csv: plan 6.8 MB/15 MB, 120 MB/s, 1s
// left". The rate is left out until the phase has run minRateSpan.
func (u *progressUI) describe(value int64, now time.Time) string {
	amount := formatBytes
	if u.phase == "apply" {
		amount = formatCount
	}
	s := fmt.Sprintf("%s %s/%s", u.phase, amount(value), amount(u.max))
	if u.phase == "apply" {
		s += " rows"
	}
	if span := now.Sub(u.start); span >= minRateSpan && value > u.base {
		rate := float64(value-u.base) / span.Seconds()
		if u.phase == "apply" {
			s += fmt.Sprintf(", %s rows/s", formatCount(int64(rate)))
		} else {
			s += fmt.Sprintf(", %s/s", formatBytes(int64(rate)))
		}
		left := time.Duration(float64(u.max-value) / rate * float64(time.Second))
		s += ", " + formatLeft(left) + " left"
	}
	// Keep the line within the terminal, or every redraw starts a new one:
	// "100% |bar| " takes the bar's width and 9 columns, and one is kept
	// free.
	room := u.width() - 1 - (u.barW + 9) - len(": ") - utf8.RuneCountInString(s)
	return shorten(u.name(), room) + ": " + s
}

// name is the file's name, with its place among several files.
func (u *progressUI) name() string {
	if u.total > 1 {
		return fmt.Sprintf("[%d/%d] %s", u.index, u.total, esc(u.file))
	}
	return esc(u.file)
}

// Write writes p (log lines) to the bar's writer, erasing the bar first so
// that a line never starts after it; the next report draws it again.
func (u *progressUI) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.erase()
	u.drawn = time.Time{}
	return u.w.Write(p)
}

// clear removes the bar, before a result line is printed.
func (u *progressUI) clear() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.erase()
	u.bar, u.phase = nil, ""
}

// erase blanks the bar's line.
func (u *progressUI) erase() {
	if u.shown > 0 {
		fmt.Fprintf(u.w, "\r%*s\r", u.shown, "")
		u.shown = 0
	}
}

// formatBytes says n bytes in decimal units: "950 B", "6.8 MB", "15 GB".
func formatBytes(n int64) string {
	const units = "kMGTPE"
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/1000, 0
	for f >= 999.95 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f %cB", f, units[i])
	}
	return fmt.Sprintf("%.0f %cB", f, units[i])
}

// formatCount says a count in at most four digits: "950", "9999", "12k",
// "1.2M".
func formatCount(n int64) string {
	switch {
	case n < 10_000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	case n < 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n < 1_000_000_000:
		return fmt.Sprintf("%dM", n/1_000_000)
	default:
		return fmt.Sprintf("%.1fG", float64(n)/1e9)
	}
}

// formatLeft rounds a time left to what a person reads: "0s", "42s",
// "3m05s", "2h10m".
func formatLeft(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// shorten cuts s to at most n runes (at least 8), replacing its middle
// with "…", which keeps a file name's start and its extension.
func shorten(s string, n int) string {
	n = max(n, 8)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	tail := (n - 1) / 2
	return string(r[:n-1-tail]) + "…" + string(r[len(r)-tail:])
}
