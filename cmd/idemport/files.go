package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/idemport/idemport/reader"
	"github.com/idemport/idemport/reader/remote"
)

// expandArgs turns import's arguments into files in a stable order: a file
// stays as given; a directory contributes every file below it whose name
// says it is a supported format (hidden entries skipped), sorted; a glob
// pattern contributes its matches, sorted. A path named twice is imported
// once. An empty directory or a pattern that matches nothing contributes
// nothing (the result may be empty); a pattern whose directory does not
// exist is an error, as a named file that does not exist is one. An
// s3://BUCKET/PREFIX/ contributes what list returns for it (the objects
// below, in key order); any other URL stays as given.
func expandArgs(args []string, format string, list func(prefix string) ([]string, error)) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		clean := filepath.Clean(p)
		if !seen[clean] {
			seen[clean] = true
			out = append(out, p)
		}
	}
	for _, arg := range args {
		if remote.IsURL(arg) {
			if !remote.IsPrefix(arg) {
				add(arg)
				continue
			}
			urls, err := list(arg)
			if err != nil {
				return nil, err
			}
			for _, u := range urls {
				add(u)
			}
			continue
		}
		if strings.ContainsAny(arg, "*?[") {
			if _, err := os.Stat(arg); err != nil { // not a file that happens to hold * in its name
				matches, err := filepath.Glob(arg)
				if err != nil {
					return nil, usageError{fmt.Errorf("pattern %q: %v", arg, err)}
				}
				if dir := filepath.Dir(arg); len(matches) == 0 && !strings.ContainsAny(dir, "*?[") {
					if _, err := os.Stat(dir); err != nil {
						return nil, fmt.Errorf("pattern %q: %w", arg, err)
					}
				}
				sort.Strings(matches)
				for _, m := range matches {
					if st, err := os.Stat(m); err == nil && !st.IsDir() {
						add(m)
					}
				}
				continue
			}
		}
		st, err := os.Stat(arg)
		if err != nil || !st.IsDir() {
			add(arg) // a missing file is reported by its import, with the others still imported
			continue
		}
		var found []string
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != arg && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if _, _, err := reader.Detect(p); err == nil || format != "" {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read directory %s: %w", arg, err)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return out, nil
}
