package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// readmeSections are the sections of the table in docs/development.md.
const readmeSections = "first,delta,rerun,resume,formats,memory,remote"

// markdown collects a run's rows and prints them as the table of
// docs/development.md's benchmark section: one line per row of idemport
// (and per anchor timed against another), each beside the anchor its
// ratio is to, that anchor's median time and the ratio; an anchor's own
// row is not repeated. It is also the writer the anchors' commands go to
// (env.show), each under its row's name, printed after the table.
type markdown struct {
	lines   []string
	anchors map[string]row // by label, the latest added
	cmds    bytes.Buffer
	pending string // the name of the last row added, not yet written to cmds
}

func newMarkdown() *markdown { return &markdown{anchors: map[string]row{}} }

func (m *markdown) add(r row) {
	m.pending = r.name
	if r.label != "" {
		m.anchors[r.label] = r
		if r.vs == "" {
			return
		}
	}
	alt, ratio := "", ""
	if r.vs != "" {
		alt, ratio = r.vs, fmt.Sprintf("%.2f×", r.ratio)
		if a, ok := m.anchors[r.vs]; ok {
			alt = a.name + ", " + seconds(a.wall)
			if a.note != "" && a.wall > 0 {
				alt += ", " + a.note
			} else if a.note != "" {
				alt = a.name + ", " + a.note
			}
		}
	}
	var cell []string
	if r.wall > 0 {
		cell = append(cell, seconds(r.wall))
	}
	if r.rows > 0 && r.wall > 0 {
		cell = append(cell, perSecond(float64(r.rows)/r.wall)+" rows/s")
	}
	if r.rss > 0 {
		cell = append(cell, fmt.Sprintf("%.0f MiB", float64(r.rss)/1024))
	}
	if r.note != "" {
		cell = append(cell, r.note)
	}
	m.lines = append(m.lines, "| "+strings.Join([]string{r.name, strings.Join(cell, ", "), alt, ratio}, " | ")+" |")
}

// Write takes an anchor's command lines (env.show), headed by the name of
// the row added last.
func (m *markdown) Write(p []byte) (int, error) {
	if m.pending != "" {
		fmt.Fprintf(&m.cmds, "\n%s:\n", m.pending)
		m.pending = ""
	}
	return m.cmds.Write(p)
}

// print writes the table, then the anchors' commands.
func (m *markdown) print(w io.Writer) {
	fmt.Fprintln(w, "\n| | idemport | alternative | ratio |\n|---|---|---|---|")
	for _, l := range m.lines {
		fmt.Fprintln(w, l)
	}
	if m.cmds.Len() > 0 {
		fmt.Fprintf(w, "\nThe alternatives' commands, as timed:\n%s\n", m.cmds.String())
	}
}

// seconds formats a median wall time as the table shows it.
func seconds(s float64) string {
	if s < 0.1 {
		return fmt.Sprintf("%.3f s", s)
	}
	return fmt.Sprintf("%.2f s", s)
}

// perSecond formats a rate: 915k, 1.13M (and 850 under a thousand).
func perSecond(r float64) string {
	if r < 1e3 {
		return fmt.Sprintf("%.0f", r)
	}
	if r >= 1e6 {
		return fmt.Sprintf("%.2fM", r/1e6)
	}
	return fmt.Sprintf("%.0fk", r/1e3)
}
