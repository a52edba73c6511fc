package main

import "testing"

func TestColumnar(t *testing.T) {
	for files, want := range map[string]bool{
		"a.parquet":                 true,
		"a.parquet,b.arrow":         true,
		"x/a.PARQUET,b.feather":     true,
		"a.ipc,b.arrows":            true,
		"a.csv":                     false,
		"a.parquet,b.csv":           false,
		"a.parquet.gz":              false,
		"orders.jsonl,orders.arrow": false,
	} {
		if got := columnar(files); got != want {
			t.Errorf("columnar(%q) = %v, want %v", files, got, want)
		}
	}
}
