package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Input is one file to load, or one entry of a walked directory that is not loaded.
type Input struct {
	Path     string
	FromWalk bool   // found by walking a directory: skipped quietly when it is not evidence
	Root     string // the directory named on the command line that the walk found Path under
	Skip     string // why a walked entry is not read at all (a FIFO, device or socket)
	Err      error  // the entry could not be read (missing, an unreadable directory); the rest is loaded
}

// ExpandPaths turns the command line's inputs into a list of files: directories are walked
// recursively (hidden entries skipped, symlinked directories followed once), globs are
// expanded, "-" stands for stdin. A name on the command line that is not there or matches
// nothing, and what a walk finds but cannot read (an unreadable directory), is an Input with Err,
// and a walked FIFO, device or socket an Input with Skip, so the rest still loads. A FIFO named
// on the command line is read as a stream.
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
				// as a missing file: the other inputs are loaded (exit code 5, partial)
				files = append(files, Input{Path: p, Err: fmt.Errorf("%s: no file matches", p)})
				continue
			}
			matches = m
		}
		for _, m := range matches {
			st, err := os.Stat(m)
			if err != nil {
				// named on the command line but not there (a mount that failed, a typo): named
				// in the error, the other inputs loaded, as an unreadable file in a directory is
				files = append(files, Input{Path: m, Err: fmt.Errorf("reading %s: %w", m, err)})
				continue
			}
			if !st.IsDir() {
				files = append(files, Input{Path: m})
				continue
			}
			w := walker{seen: map[string]bool{}, root: m}
			w.dir(m)
			files = append(files, w.files...)
		}
	}
	return files, nil
}

// walker walks directories, following symlinked directories and guarding against loops by
// the real path of every directory it has entered.
type walker struct {
	files []Input
	seen  map[string]bool
	root  string
}

func (w *walker) dir(path string) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		w.files = append(w.files, Input{Path: path, FromWalk: true, Err: fmt.Errorf("reading %s: %w", path, err)})
		return
	}
	if w.seen[real] {
		return // a symlink loop, or a directory reached twice
	}
	w.seen[real] = true
	entries, err := os.ReadDir(path)
	if err != nil {
		w.files = append(w.files, Input{Path: path, FromWalk: true, Err: fmt.Errorf("reading %s: %w", path, err)})
	}
	for _, e := range entries { // ReadDir returns what it read before an error
		name := filepath.Join(path, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		mode := e.Type()
		if mode&os.ModeSymlink != 0 {
			st, err := os.Stat(name)
			if err != nil {
				w.files = append(w.files, Input{Path: name, FromWalk: true, Err: fmt.Errorf("reading %s: %w", name, err)})
				continue
			}
			mode = st.Mode().Type()
		}
		switch {
		case mode.IsDir():
			w.dir(name)
		case !mode.IsRegular():
			w.files = append(w.files, Input{Path: name, FromWalk: true, Skip: skippedNotRegular})
		case !ignoredFile(e.Name()):
			w.files = append(w.files, Input{Path: name, FromWalk: true, Root: w.root})
		}
	}
}

// ignoredFile reports files that live beside evidence but are not evidence.
func ignoredFile(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".md") || strings.HasSuffix(lower, ".duckdb") || strings.HasSuffix(lower, ".wal") ||
		strings.HasSuffix(lower, ".golden") || strings.HasSuffix(lower, ".sh") || strings.HasSuffix(lower, ".go")
}

// clusterOf returns the cluster of the evidence in f: with --cluster-per-dir the first
// directory level under the directory argument it was found in
// (samples/slow-rewind/audit.log.gz: slow-rewind); otherwise, and for files named on the command
// line or lying directly in the directory argument, --cluster.
func (in *Ingester) clusterOf(f Input) string {
	if !in.opt.ClusterPerDir || f.Root == "" {
		return in.opt.Cluster
	}
	rel, err := filepath.Rel(f.Root, f.Path)
	if err != nil {
		return in.opt.Cluster
	}
	dir, _, nested := strings.Cut(filepath.ToSlash(rel), "/")
	if !nested {
		return in.opt.Cluster
	}
	return dir
}
