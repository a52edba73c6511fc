// Package gcstart holds the garbage collector off while the command's
// packages initialise, for the command to set its own settings once main
// starts.
//
// Every run pays, before main, for the initialisation of every package
// linked into the command: 3.3 MB of allocations (excelize's tables,
// Arrow's compute kernels, the AWS SDK's endpoint tables), which with Go's
// default setting start a collection, a tenth of the CPU time of
// `idemport version`. This package is initialised as soon as its own
// imports (runtime/debug's) are, after 0.6 MB of those allocations and
// before the large ones; a rerun that the quick check settles took 14 ms
// instead of 18 (medians, paired). Only package main imports it: a program
// that does must call debug.SetGCPercent itself once it starts (with
// Percent, to keep GOGC's setting), or its collector stays off.
package gcstart
