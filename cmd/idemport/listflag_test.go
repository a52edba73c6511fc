package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"testing"

	"github.com/spf13/pflag"
)

// TestListFlagAsPflags: a listFlag does what pflag's stringArray and
// stringSlice do with the same calls: the values, the text, the type and
// the help line.
func TestListFlagAsPflags(t *testing.T) {
	t.Parallel()
	type step struct {
		op  string // set, append, replace
		arg []string
	}
	seqs := [][]step{
		{},
		{{"set", []string{"a"}}},
		{{"set", []string{"a,b"}}, {"set", []string{`"c,d",e`}}},
		{{"set", []string{""}}},
		{{"set", []string{`x"y`}}},
		{{"set", []string{`"unclosed`}}},
		{{"replace", []string{"p", "q,r"}}, {"set", []string{"s"}}},
		{{"set", []string{"a"}}, {"append", []string{"b,c"}}, {"set", []string{"d"}}},
		{{"replace", nil}},
	}
	for _, commas := range []bool{false, true} {
		for i, seq := range seqs {
			t.Run(fmt.Sprintf("commas=%v/%d", commas, i), func(t *testing.T) {
				t.Parallel()
				var theirs, ours []string
				pf := pflag.NewFlagSet("theirs", pflag.ContinueOnError)
				of := pflag.NewFlagSet("ours", pflag.ContinueOnError)
				if commas {
					pf.StringSliceVar(&theirs, "list", nil, "the list")
					stringSliceVar(of, &ours, "list", "the list")
				} else {
					pf.StringArrayVar(&theirs, "list", nil, "the list")
					stringArrayVar(of, &ours, "list", "the list")
				}
				if got, want := of.FlagUsages(), pf.FlagUsages(); got != want {
					t.Errorf("help %q, want %q", got, want)
				}
				pv, ov := pf.Lookup("list").Value, of.Lookup("list").Value
				for _, s := range seq {
					var perr, oerr error
					switch s.op {
					case "set":
						perr, oerr = pv.Set(s.arg[0]), ov.Set(s.arg[0])
					case "append":
						perr, oerr = pv.(pflag.SliceValue).Append(s.arg[0]), ov.(pflag.SliceValue).Append(s.arg[0])
					case "replace":
						perr, oerr = pv.(pflag.SliceValue).Replace(s.arg), ov.(pflag.SliceValue).Replace(s.arg)
					}
					if fmt.Sprint(oerr) != fmt.Sprint(perr) {
						t.Errorf("%s %q: error %v, want %v", s.op, s.arg, oerr, perr)
					}
				}
				if !slices.Equal(ours, theirs) || (ours == nil) != (theirs == nil) {
					t.Errorf("values %#v, want %#v", ours, theirs)
				}
				if got, want := ov.(pflag.SliceValue).GetSlice(), pv.(pflag.SliceValue).GetSlice(); !slices.Equal(got, want) {
					t.Errorf("GetSlice %#v, want %#v", got, want)
				}
				if ov.String() != pv.String() || ov.Type() != pv.Type() {
					t.Errorf("String %q, Type %q; want %q, %q", ov.String(), ov.Type(), pv.String(), pv.Type())
				}
			})
		}
	}
}

// treeAllocLimit is the most that building the command tree, as every run
// does before it parses its arguments, may allocate. It allocated 300 KB
// when pflag's list values each rendered their default through a new CSV
// writer and the environment's flags were found on a second run command;
// every run pays for it, a rerun the quick check settles included.
const treeAllocLimit = 160 << 10

// TestCommandTreeAllocatesLittle builds the command tree as run does
// before it executes and checks what that allocates, on average over 20
// builds after a first (what a process allocates once, the first build
// pays). Not parallel: the allocations are counted for the whole process.
// A fixed count, not testing.Benchmark: its second of calibrated loops
// took 18 s on a loaded machine for the same average.
func TestCommandTreeAllocatesLittle(t *testing.T) {
	build := func() {
		e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }, into: "x.db"}
		root := newRootCmd(e)
		_ = envFlagNames(root)
		root.InitDefaultCompletionCmd()
		usageArgs(root)
	}
	build()
	const builds = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range builds {
		build()
	}
	runtime.ReadMemStats(&after)
	if n := (after.TotalAlloc - before.TotalAlloc) / builds; n > treeAllocLimit {
		t.Errorf("building the command tree allocates %d bytes, more than %d: every run pays for them", n, treeAllocLimit)
	}
}
