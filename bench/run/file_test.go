package main

import (
	"strings"
	"testing"
)

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

func TestFormatsFor(t *testing.T) {
	for sel, want := range map[string]string{
		"first":                     "csv",
		"first,delta,rerun":         "csv",
		"fixed,resume,memory":       "csv",
		"parse":                     "csv,jsonl",
		"first,formats":             "csv,jsonl,parquet",
		readmeSections:              "csv,jsonl,parquet",
		strings.Join(sections, ","): "csv,jsonl,parquet",
	} {
		if got := strings.Join(formatsFor(sel), ","); got != want {
			t.Errorf("formatsFor(%q) = %s, want %s", sel, got, want)
		}
	}
}
