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
	for _, arg := range args {
		files, err := expandArg(arg, format, list)
		if err != nil {
			return nil, err
		}
		for _, p := range files {
			clean := filepath.Clean(p)
			if !seen[clean] {
				seen[clean] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// expandArg returns the files one of import's arguments stands for, in
// order, as expandArgs says.
func expandArg(arg string, format string, list func(prefix string) ([]string, error)) ([]string, error) {
	if remote.IsURL(arg) {
		if !remote.IsPrefix(arg) {
			return []string{arg}, nil
		}
		return list(arg)
	}
	if strings.ContainsAny(arg, "*?[") {
		if _, err := os.Stat(arg); err != nil { // not a file that happens to hold * in its name
			return globFiles(arg)
		}
	}
	st, err := os.Stat(arg)
	if err != nil || !st.IsDir() {
		return []string{arg}, nil // a missing file is reported by its import, with the others still imported
	}
	return dirFiles(arg, format)
}

// globFiles returns the files pattern matches, sorted; a pattern whose
// directory does not exist is an error.
func globFiles(pattern string) ([]string, error) {
	var files []string
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, usageError{fmt.Errorf("pattern %q: %v", pattern, err)}
	}
	if dir := filepath.Dir(pattern); len(matches) == 0 && !strings.ContainsAny(dir, "*?[") {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("pattern %q: %w", pattern, err)
		}
	}
	sort.Strings(matches)
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && !st.IsDir() {
			files = append(files, m)
		}
	}
	return files, nil
}

// dirFiles returns the files below dir whose name says they are in a
// supported format (any file, when format is given), hidden entries
// skipped, sorted.
func dirFiles(dir string, format string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
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
		return nil, fmt.Errorf("read directory %s: %w", dir, err)
	}
	sort.Strings(found)
	return found, nil
}
