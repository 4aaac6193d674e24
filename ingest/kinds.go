package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kubesift/kubesift/ingest/audit"
	"github.com/kubesift/kubesift/ingest/conntrack"
	"github.com/kubesift/kubesift/ingest/k8sobj"
	"github.com/kubesift/kubesift/internal/load"
	"github.com/kubesift/kubesift/store"
)

// A Loader loads one kind of evidence. A new kind is a package under ingest/ with a Loader that
// declares its tables, and its line in loaders.
type Loader interface {
	// Kind names the evidence for --kind, ingest_files and ingest_errors.
	Kind() string
	// Detect reports whether a file with this name and first bytes (decompressed) is this
	// evidence.
	Detect(name string, head []byte) bool
	// Tables are the tables Load writes, with their time column and dedupe key; Schema gathers
	// them into the database's tables.
	Tables() []store.Table
	// Resumable says whether a file that grew since its last load is read on from where that
	// load stopped (EndOffset); otherwise a file loaded before is skipped.
	Resumable() bool
	// Load reads the file into the tables inside the load's transaction, which the loads of
	// other small files may share (see load.File.Shared), and reports in f what it did; its
	// errors name the file.
	Load(ctx context.Context, f *load.File) error
}

// A RunLoader is a Loader that loads consecutive files of a group that shares a transaction
// (see groupSize) together, with the statements of one load: each file is still a load of its
// own, with its load id, counts and rejected lines.
type RunLoader interface {
	Loader
	// LoadRun loads files, in order, as Load loads each after the one before it. Their load ids
	// ascend in that order, with no other load's between them; errors name the files.
	LoadRun(ctx context.Context, files []*load.File) error
}

// loaders lists every kind of evidence, in the order DetectKind asks them.
var loaders = []Loader{
	audit.Loader{},
	k8sobj.Loader{},
	conntrack.Loader{},
}

// Schema is the tables of a kubesift database: every loader's tables, grouped by evidence, and
// kubesift's own. It is what store.Open creates and `kubesift schema` documents.
func Schema() store.Schema {
	var tables []store.Table
	for _, l := range loaders {
		tables = append(tables, l.Tables()...)
	}
	return store.NewSchema(tables...)
}

// Kind names a kind of evidence: the Kind of a Loader, or KindAuto.
type Kind string

// KindAuto asks DetectKind for each file's kind.
const KindAuto Kind = "auto"

// KindNames lists the values --kind accepts: auto, then the loaders' kinds.
func KindNames() []string {
	names := []string{string(KindAuto)}
	for _, l := range loaders {
		names = append(names, l.Kind())
	}
	return names
}

// ParseKind validates a --kind value.
func ParseKind(s string) (Kind, error) {
	names := KindNames()
	if !slices.Contains(names, s) {
		return "", fmt.Errorf("unknown kind %q (want one of %s)", s, strings.Join(names, ", "))
	}
	return Kind(s), nil
}

// DetectKind guesses the kind of evidence from a file's name and first bytes (decompressed).
func DetectKind(name string, head []byte) (Kind, bool) {
	for _, l := range loaders {
		if l.Detect(name, head) {
			return Kind(l.Kind()), true
		}
	}
	return "", false
}

// loaderOf returns the loader of kind.
func loaderOf(kind Kind) (Loader, bool) {
	i := slices.IndexFunc(loaders, func(l Loader) bool { return Kind(l.Kind()) == kind })
	if i < 0 {
		return nil, false
	}
	return loaders[i], true
}
