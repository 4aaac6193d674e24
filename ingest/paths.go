package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Input is one file to load.
type Input struct {
	Path     string
	FromWalk bool // found by walking a directory: skipped quietly when it is not evidence
}

// ExpandPaths turns the command line's inputs into a list of files: directories are walked
// recursively (hidden entries skipped), globs are expanded, "-" stands for stdin. A name that
// matches nothing is an error.
func ExpandPaths(paths []string) ([]Input, error) {
	var files []Input
	for _, p := range paths {
		if p == "-" {
			files = append(files, Input{Path: p})
			continue
		}
		matches := []string{p}
		if strings.ContainsAny(p, "*?[") {
			m, err := filepath.Glob(p)
			if err != nil {
				return nil, fmt.Errorf("bad glob %q: %w", p, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: no file matches", p)
			}
			matches = m
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				files = append(files, Input{Path: m})
				continue
			}
			err = filepath.WalkDir(m, func(path string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if path != m && strings.HasPrefix(d.Name(), ".") {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
				if !d.IsDir() && !ignoredFile(d.Name()) {
					files = append(files, Input{Path: path, FromWalk: true})
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// ignoredFile reports files that live beside evidence but are not evidence.
func ignoredFile(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".md") || strings.HasSuffix(lower, ".duckdb") || strings.HasSuffix(lower, ".wal") ||
		strings.HasSuffix(lower, ".golden") || strings.HasSuffix(lower, ".sh") || strings.HasSuffix(lower, ".go")
}
