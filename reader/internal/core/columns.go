package core

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrOption means a reading option does not fit the file: --select or
// --rename names a column it does not have, --columns gives another number
// of names than it has columns, or the names they make collide. The
// command, not the file, is wrong.
var ErrOption = errors.New("option does not fit the file")

// DefaultNames returns column1 … columnN, the names of the columns of a
// file without a header when Options.Names does not give them.
func DefaultNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "column" + strconv.Itoa(i+1)
	}
	return out
}

// Project decides, from the names of a file's columns (after
// Options.Names), which of them are read and what they are called: the
// position in file of each column read, in order, and its name after
// Options.Rename. proj is nil when every column is read in file order.
func (o *Options) Project(file []string) (proj []int, names []string, err error) {
	pos := make(map[string]int, len(file))
	for i, n := range file {
		if _, dup := pos[n]; !dup {
			pos[n] = i
		}
	}
	for old := range o.Rename {
		if _, ok := pos[old]; !ok {
			return nil, nil, fmt.Errorf("%w: --rename %s: the file has no column %q (it has %s)", ErrOption, old, old, strings.Join(file, ", "))
		}
	}
	if len(o.Select) > 0 {
		seen := map[string]bool{}
		for _, n := range o.Select {
			i, ok := pos[n]
			if !ok {
				return nil, nil, fmt.Errorf("%w: --select: the file has no column %q (it has %s)", ErrOption, n, strings.Join(file, ", "))
			}
			if seen[n] {
				return nil, nil, fmt.Errorf("%w: --select names %q twice", ErrOption, n)
			}
			seen[n] = true
			proj = append(proj, i)
		}
	} else {
		proj = make([]int, len(file))
		for i := range proj {
			proj[i] = i
		}
	}
	out := map[string]string{}
	for _, i := range proj {
		name := file[i]
		if n, ok := o.Rename[name]; ok {
			name = n
		}
		if prev, dup := out[name]; dup && prev != file[i] { // the same name twice in the file is the header's defect

			return nil, nil, fmt.Errorf("%w: columns %q and %q would both be named %q", ErrOption, prev, file[i], name)
		}
		out[name] = file[i]
		names = append(names, name)
	}
	if len(o.Select) == 0 {
		proj = nil
	}
	return proj, names, nil
}

// SourceName returns the name in the file of the column named name after
// Options.Rename.
func (o *Options) SourceName(name string) string {
	for old, n := range o.Rename {
		if n == name {
			return old
		}
	}
	return name
}
