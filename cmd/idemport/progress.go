package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/idemport/idemport/pipeline"
)

// progressUI draws one progress bar on stderr for the file being imported,
// with the file's place among all files in its description. It draws only
// when enabled: stderr is a terminal (or --progress always), so cron logs
// never get a bar or a carriage return.
type progressUI struct {
	w       io.Writer
	enabled bool

	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	phase string
	file  string
	index int
	total int
}

// newProgressUI decides whether to draw: mode is auto, always or never.
func newProgressUI(w io.Writer, mode string) (*progressUI, error) {
	u := &progressUI{w: w}
	switch mode {
	case "never":
	case "always":
		u.enabled = true
	case "auto":
		f, ok := w.(*os.File)
		u.enabled = ok && term.IsTerminal(int(f.Fd()))
	default:
		return nil, usageError{fmt.Errorf("--progress %q: want auto, always or never", mode)}
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
	u.mu.Lock()
	defer u.mu.Unlock()
	if p.Phase != u.phase {
		u.newBar(p)
	}
	switch p.Phase {
	case "apply":
		u.bar.Describe(u.describe(fmt.Sprintf("apply %d/%d partitions", p.Partitions, p.TotalParts)))
		u.bar.Set64(p.Rows)
	case "plan":
		if p.TotalBytes > 0 && p.Bytes <= p.TotalBytes {
			u.bar.Set64(p.Bytes)
		} else {
			u.bar.Describe(u.describe(fmt.Sprintf("plan %d rows", p.Rows)))
			u.bar.Add64(0)
		}
	default:
		u.bar.Set64(p.Bytes)
	}
}

func (u *progressUI) describe(what string) string {
	if u.total > 1 {
		return fmt.Sprintf("[%d/%d] %s: %s", u.index, u.total, u.file, what)
	}
	return fmt.Sprintf("%s: %s", u.file, what)
}

func (u *progressUI) newBar(p pipeline.Progress) {
	if u.bar != nil {
		u.bar.Clear()
	}
	u.phase = p.Phase
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(u.w),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionFullWidth(),
	}
	max := p.TotalBytes
	switch p.Phase {
	case "apply":
		max = p.TotalRows
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetDescription(u.describe("apply")))
	case "plan":
		if p.TotalBytes <= 0 || p.Bytes > p.TotalBytes { // compressed: the decompressed size is unknown
			max = -1
		}
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionSetDescription(u.describe("plan (validate every row)")))
	default:
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionSetDescription(u.describe("hash")))
	}
	u.bar = progressbar.NewOptions64(max, opts...)
}

// clear removes the bar, before a result line is printed.
func (u *progressUI) clear() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.bar != nil {
		u.bar.Clear()
		u.bar = nil
	}
	u.phase = ""
}
