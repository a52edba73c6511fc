package main

import (
	"bytes"
	"encoding/csv"
	"strings"

	"github.com/spf13/pflag"
)

// listFlag is the value of a flag that takes a list of strings, empty by
// default: pflag's stringArray (repeatable, each value taken whole) or, with
// commas, its stringSlice (each value split at its commas, read as a CSV
// record). It behaves as pflag's own in every way the commands use one:
// its Type, Set, the pflag.SliceValue methods, and String.
//
// It exists because pflag's own renders its default as CSV text through a
// new encoding/csv Writer, whose 4 KiB buffer every registration
// allocates: 35 flags made building the command tree allocate 300 KB, and
// every run builds it before it does anything (see docs/development.md).
type listFlag struct {
	value   *[]string
	changed bool
	commas  bool // stringSlice: a value is split at its commas
}

// stringArrayVar defines on f a repeatable flag whose values are appended
// to *p whole, as pflag.FlagSet.StringArrayVar does with a nil default.
func stringArrayVar(f *pflag.FlagSet, p *[]string, name, usage string) {
	addList(f, &listFlag{value: p}, name, usage)
}

// stringSliceVar defines on f a flag whose comma-separated values are
// appended to *p, as pflag.FlagSet.StringSliceVar does with a nil default.
func stringSliceVar(f *pflag.FlagSet, p *[]string, name, usage string) {
	addList(f, &listFlag{value: p, commas: true}, name, usage)
}

func addList(f *pflag.FlagSet, v *listFlag, name, usage string) {
	*v.value = nil
	// DefValue is empty rather than pflag's "[]", which it reads as the
	// zero value only of its own list types: the help shows no default
	// either way.
	f.AddFlag(&pflag.Flag{Name: name, Usage: usage, Value: v})
}

// Type is pflag's name of the list's type, which the help shows (as
// "stringArray" or "strings") and the feeds file's checks read.
func (v *listFlag) Type() string {
	if v.commas {
		return "stringSlice"
	}
	return "stringArray"
}

// String is the values as one CSV record in brackets, as pflag's: "[]"
// when there are none.
func (v *listFlag) String() string {
	if len(*v.value) == 0 {
		return "[]"
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(*v.value) // a bytes.Buffer takes every write
	w.Flush()
	return "[" + strings.TrimSuffix(b.String(), "\n") + "]"
}

// Set takes one value given on the command line: the first replaces the
// default, the next ones are appended.
func (v *listFlag) Set(s string) error {
	vals := []string{s}
	if v.commas {
		vals = []string{}
		if s != "" {
			var err error
			if vals, err = csv.NewReader(strings.NewReader(s)).Read(); err != nil {
				return err
			}
		}
	}
	if !v.changed {
		*v.value = vals
	} else {
		*v.value = append(*v.value, vals...)
	}
	v.changed = true
	return nil
}

// Append adds s whole, as pflag's list values do.
func (v *listFlag) Append(s string) error {
	*v.value = append(*v.value, s)
	return nil
}

// Replace sets the values to vals: a copy of them for a stringArray,
// vals itself for a stringSlice, as pflag does.
func (v *listFlag) Replace(vals []string) error {
	if v.commas {
		*v.value = vals
		return nil
	}
	*v.value = append(make([]string, 0, len(vals)), vals...)
	return nil
}

// GetSlice returns the values: a copy for a stringArray, the flag's own
// slice for a stringSlice, as pflag does.
func (v *listFlag) GetSlice() []string {
	if v.commas {
		return *v.value
	}
	return append(make([]string, 0, len(*v.value)), *v.value...)
}

var _ pflag.SliceValue = (*listFlag)(nil)
