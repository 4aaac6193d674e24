package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A dataset is a directory of Hive-partitioned Parquet files, one directory per table:
//
//	DIR/<table>/cluster=<cluster>/date=<YYYY-MM-DD>/part-<i>.parquet
//	DIR/<table>/cluster=<cluster>/date=<YYYY-MM-DD>/part-<value>-<i>.parquet (Table.DatasetFiles)
//
// written by ExportDataset and read back by OpenDataset. The partition keys are not stored in
// the files: the cluster comes from the path (URL-escaped, as DuckDB writes it), the date is
// the UTC day of the table's TimeColumn. Every table with evidence (Table.Evidence) has one.

// DatasetPartitionKeys are the Hive partition keys of every dataset table, outermost first.
var DatasetPartitionKeys = []string{"cluster", "date"}

// datasetRowGroup bounds the row groups of dataset files: large enough for scans, small enough
// in bytes that a reader buffers little per thread even with audit events of several KB.
const (
	datasetRowGroupRows  = 122880
	datasetRowGroupBytes = "64MB"
)

// DatasetTables returns the tables of s a dataset holds: those filled by evidence, but for those
// derived from another (Table.Derive), which OpenDataset reads as views.
func (s Schema) DatasetTables() []Table {
	var out []Table
	for _, t := range s {
		if t.Evidence != "" && t.Derive == "" {
			out = append(out, t)
		}
	}
	return out
}

// HasColumn reports whether t has a column named name.
func (t Table) HasColumn(name string) bool {
	return slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Name == name })
}

// DatasetPartition is one (table, cluster, day) directory an export wrote.
type DatasetPartition struct {
	Table, Cluster, Date string
	Replaced             bool // an earlier export's files of that day were replaced
}

// DayWindow widens [since, until] to whole UTC days: a dataset export always writes whole days,
// so that exporting a day again replaces it with all of its rows.
func DayWindow(since, until *time.Time) (*time.Time, *time.Time) {
	if since != nil {
		s := since.UTC().Truncate(24 * time.Hour)
		since = &s
	}
	if until != nil {
		u := until.UTC().Truncate(24 * time.Hour).Add(24*time.Hour - time.Nanosecond)
		until = &u
	}
	return since, until
}

// ExportDataset writes the rows of tables observed in [since, until] (widened to whole UTC
// days, see DayWindow) into the dataset dir, zstd-compressed, partitioned by their cluster
// column (a table without one, or a NULL, goes to cluster "", the unknown cluster). Each (table,
// cluster, day) directory written replaces the one an earlier export left, atomically: the new
// files are written into a staging directory under dir and swapped in with one rename, so a
// reader sees either the old day or the new one (on a file system that cannot exchange two
// directories, two renames: see swapIn). Partitions the export has no rows for are left as they
// are. It returns the partitions written and the staging directories it could not remove, which
// hold no day of the dataset (see LeftStaging).
func (db *DB) ExportDataset(ctx context.Context, dir string, tables []Table, since, until *time.Time) (written []DatasetPartition, left []LeftStaging, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating dataset %s: %w", dir, err)
	}
	since, until = DayWindow(since, until)
	for _, t := range tables {
		if t.TimeColumn == "" || t.Evidence == "" {
			return written, left, fmt.Errorf("table %s has no evidence time and is not part of a dataset", t.Name)
		}
		parts, kept, err := db.exportDatasetTable(ctx, dir, t, since, until)
		written, left = append(written, parts...), append(left, kept...)
		if err != nil {
			return written, left, fmt.Errorf("exporting %s into dataset %s: %w", t.Name, dir, err)
		}
	}
	return written, left, nil
}

// LeftStaging is a staging directory that an export could not remove at its end, and why: on
// NFS, a reader on the same node that still holds a replaced day's files open keeps them (as
// .nfs… files) until it closes them. The days swapped in are in place; the staging directory
// holds no day of the dataset, and RemoveStaleStaging removes it once it is stale.
type LeftStaging struct {
	Dir string
	Err error
}

// stagingPrefix names the staging directories ExportDataset writes a table's days into, under the
// dataset's root, before it swaps them in.
const stagingPrefix = ".staging-"

// StaleStagingAge is how long a staging directory under a dataset's root may go without a write
// before RemoveStaleStaging takes it for one that an export killed before it finished left
// behind (a pod killed for memory, a drained node): an export writes its files within minutes.
const StaleStagingAge = 6 * time.Hour

// StaleStaging is a staging directory an export left behind.
type StaleStaging struct {
	Dir       string
	Bytes     int64
	LastWrite time.Time
	Err       error // why it could not be read or removed; nil when it was removed
}

// RemoveStaleStaging removes the staging directories under the dataset dir in which nothing was
// written for StaleStagingAge before now, and returns them, those it could not read or remove
// with why (Err): they hold no day of the dataset, so an export goes on beside them. The
// exports that run beside it (a CronJob per cluster into one dataset) keep theirs: they are
// written to as they run. It fails only when dir cannot be read.
func RemoveStaleStaging(dir string, now time.Time) ([]StaleStaging, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []StaleStaging
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagingPrefix) {
			continue
		}
		stale := StaleStaging{Dir: filepath.Join(dir, e.Name())}
		err := filepath.WalkDir(stale.Dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.ModTime().After(stale.LastWrite) {
				stale.LastWrite = info.ModTime()
			}
			if !d.IsDir() {
				stale.Bytes += info.Size()
			}
			return nil
		})
		if errors.Is(err, os.ErrNotExist) { // its export finished while it was read
			continue
		}
		switch {
		case err != nil:
			stale.Err = fmt.Errorf("reading it: %w", err)
		case now.Sub(stale.LastWrite) < StaleStagingAge:
			continue
		default:
			stale.Err = os.RemoveAll(stale.Dir)
		}
		removed = append(removed, stale)
	}
	return removed, nil
}

// datasetFileGroup is the rows of a table that a dataset's day holds in files of their own: where
// ("" or " WHERE …") keeps them, pattern names their files (COPY's FILENAME_PATTERN).
type datasetFileGroup struct{ where, pattern string }

// datasetFileGroups returns how t's rows are grouped into files (Table.DatasetFiles): one group of
// all rows, part-<i>.parquet, when it is not split. Split by verb, the audit events of a day let
// the rules' scans for writes skip the files of gets, lists and watches by their statistics: all
// rules over the recordings replicated to 10M events took 18.3-19.5 s instead of 23.9-25.4 s
// (15.1-16.6 s from the database), for an export in 69 s instead of 49-60 s (BENCHMARKS.md).
// Sorting a day's events by kind instead took 6.3 GiB to write, and one COPY partitioned by verb
// took 87.5 s.
func (t Table) datasetFileGroups() []datasetFileGroup {
	split := t.DatasetFiles
	if split == nil {
		return []datasetFileGroup{{pattern: "part-{i}"}}
	}
	column := `"` + split.Column + `"`
	var groups []datasetFileGroup
	values := make([]string, len(split.Values))
	for i, v := range split.Values {
		values[i] = quote(v)
		groups = append(groups, datasetFileGroup{where: " WHERE " + column + " = " + values[i], pattern: "part-" + v + "-{i}"})
	}
	rest := fmt.Sprintf(" WHERE %s IS NULL OR %s NOT IN (%s)", column, column, strings.Join(values, ", "))
	return append(groups, datasetFileGroup{where: rest, pattern: "part-{i}"})
}

func (db *DB) exportDatasetTable(ctx context.Context, dir string, t Table, since, until *time.Time) (written []DatasetPartition, left []LeftStaging, err error) {
	stage, err := os.MkdirTemp(dir, stagingPrefix)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err := os.RemoveAll(stage); err != nil {
			left = append(left, LeftStaging{stage, err})
		}
	}()
	clusterExpr := "''"
	if t.HasColumn("cluster") {
		clusterExpr = "coalesce(cluster, '')"
	}
	query := fmt.Sprintf(`SELECT %s, %s AS cluster, CAST(timezone('UTC', "%s") AS DATE) AS date FROM (%s)`,
		datasetColumns(t), clusterExpr, t.TimeColumn, SelectRows(t, since, until))
	staged := filepath.Join(stage, t.Name)
	// preserve_insertion_order is off for ROW_GROUP_SIZE_BYTES; a dataset has no row order.
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET preserve_insertion_order = false"); err != nil {
		return nil, nil, err
	}
	defer conn.ExecContext(ctx, "RESET preserve_insertion_order")
	for _, g := range t.datasetFileGroups() {
		// OVERWRITE_OR_IGNORE lets the groups write into the same days; their file names differ
		copyStmt := fmt.Sprintf(`COPY (SELECT * FROM (%s)%s) TO %s (FORMAT parquet, PARTITION_BY (%s), OVERWRITE_OR_IGNORE, COMPRESSION zstd, FILENAME_PATTERN '%s', ROW_GROUP_SIZE %d, ROW_GROUP_SIZE_BYTES '%s')`,
			query, g.where, quote(staged), strings.Join(DatasetPartitionKeys, ", "), g.pattern, datasetRowGroupRows, datasetRowGroupBytes)
		if _, err := conn.ExecContext(ctx, copyStmt); err != nil {
			return nil, nil, err
		}
	}
	days, err := filepath.Glob(filepath.Join(staged, "cluster=*", "date=*"))
	if err != nil {
		return nil, nil, err
	}
	for _, day := range days {
		rel, err := filepath.Rel(staged, day)
		if err != nil {
			return written, nil, err
		}
		target := filepath.Join(dir, t.Name, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return written, nil, err
		}
		replaced, err := swapIn(day, target)
		if err != nil {
			return written, nil, fmt.Errorf("replacing %s: %w", target, err)
		}
		c, d, err := partitionValues(rel)
		if err != nil {
			return written, nil, err
		}
		written = append(written, DatasetPartition{Table: t.Name, Cluster: c, Date: d, Replaced: replaced})
	}
	return written, nil, nil
}

// datasetColumns lists t's columns for a dataset file: all but the partition keys, which are
// in the path. JSON columns are written as text (Parquet strings): other engines read DuckDB's
// JSON-annotated binary as bytes, and the dataset's views cast them back to JSON.
func datasetColumns(t Table) string {
	var cols []string
	for _, c := range t.Columns {
		switch {
		case slices.Contains(DatasetPartitionKeys, c.Name):
		case c.Type == "JSON":
			cols = append(cols, fmt.Sprintf(`CAST("%s" AS VARCHAR) AS "%s"`, c.Name, c.Name))
		default:
			cols = append(cols, `"`+c.Name+`"`)
		}
	}
	return strings.Join(cols, ", ")
}

// swapIn moves the directory staged to target. An existing target is exchanged with it in one
// rename, so readers never see the day missing, and then removed with the staging directory. On a
// file system that cannot exchange two directories (errNoExchange) it takes two renames, the old
// day moved beside staged first: a reader that lists the days in between misses this one.
func swapIn(staged, target string) (replaced bool, err error) {
	if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
		return false, os.Rename(staged, target)
	}
	err = exchange(staged, target)
	if errors.Is(err, errNoExchange) {
		old := staged + ".replaced" // in the staging directory: not a day of the dataset
		if err := os.Rename(target, old); err != nil {
			return false, err
		}
		if err := os.Rename(staged, target); err != nil {
			return false, errors.Join(err, os.Rename(old, target))
		}
		removeReplaced(old)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	removeReplaced(staged) // staged now holds the old day
	return true, nil
}

// removeReplaced removes the copy of a day that an export replaced, in its staging directory, as
// soon as it is out of the dataset, so that an export of many days does not hold the old copy of
// each until its end. What cannot be removed yet stays in the staging directory, whose removal
// reports it (LeftStaging).
func removeReplaced(old string) {
	_ = os.RemoveAll(old)
}

// errNoExchange is exchange's answer on a file system that cannot swap two directories in one
// rename.
var errNoExchange = errors.New("the file system cannot exchange two directories in one rename")

// PartitionPath returns the "cluster=…/date=…" directory of a partition, its cluster escaped as
// DuckDB's partitioned writes escape values (every byte but ASCII letters, digits and -_.~ as %XX),
// so that Hive readers give the cluster back: a "=" left as it is makes the path unreadable to them.
func PartitionPath(cluster, date string) string {
	return filepath.Join("cluster="+strings.ReplaceAll(url.QueryEscape(cluster), "+", "%20"), "date="+date)
}

// partitionValues returns the cluster and date of a "cluster=…/date=…" path.
func partitionValues(rel string) (cluster, date string, err error) {
	c, d := filepath.Split(rel)
	cluster, err = url.PathUnescape(strings.TrimPrefix(filepath.Clean(c), "cluster="))
	return cluster, strings.TrimPrefix(d, "date="), err
}

// DatasetDays returns the (cluster, day) partitions that have files in the dataset dir, of
// any table of schema, sorted by cluster and day (Table and Replaced unset).
func DatasetDays(dir string, schema Schema) ([]DatasetPartition, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	seen := map[DatasetPartition]bool{} // a fleet's year holds tens of thousands of partitions a table
	var days []DatasetPartition
	for _, t := range schema.DatasetTables() {
		dirs, err := filepath.Glob(filepath.Join(dir, t.Name, "cluster=*", "date=*"))
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			rel, err := filepath.Rel(filepath.Join(dir, t.Name), d)
			if err != nil {
				return nil, err
			}
			c, day, err := partitionValues(rel)
			if err != nil {
				return nil, fmt.Errorf("dataset %s: partition %s: %w", dir, d, err)
			}
			if p := (DatasetPartition{Cluster: c, Date: day}); !seen[p] {
				seen[p] = true
				days = append(days, p)
			}
		}
	}
	slices.SortFunc(days, func(a, b DatasetPartition) int {
		return strings.Compare(a.Cluster+"\x00"+a.Date, b.Cluster+"\x00"+b.Date)
	})
	return days, nil
}

// datasetTableDays returns the days [from, to] (nil is unbounded) of cluster in the dataset dir of
// each table of schema that a dataset holds (datasetDayFiles; nil for the others), the size of
// their Parquet files, and the tables of which cluster has days with files outside [from, to].
func datasetTableDays(dir string, schema Schema, cluster string, from, to *time.Time) (tableDays [][]datasetDay, size uint64, outside []string, err error) {
	tableDays = make([][]datasetDay, len(schema))
	for i, t := range schema {
		if t.Derive != "" || t.Evidence == "" {
			continue
		}
		days, elsewhere, err := datasetDayFiles(dir, t, cluster, from, to)
		if err != nil {
			return nil, 0, nil, err
		}
		if elsewhere {
			outside = append(outside, t.Name)
		}
		for _, d := range days {
			for _, f := range d.files {
				info, err := os.Stat(f)
				if err != nil {
					return nil, 0, nil, err
				}
				size += uint64(info.Size())
			}
		}
		tableDays[i] = days
	}
	return tableDays, size, outside, nil
}

// datasetDay is one (table, cluster, day) directory of a dataset and its Parquet files.
type datasetDay struct {
	dir   string
	files []string
}

// datasetDayFiles returns the directories of t's days [from, to] (nil is unbounded) of cluster in
// the dataset dir that hold Parquet files, with their files, in order of day, and whether a day
// outside [from, to] holds some. Only cluster's directories are listed: a fleet's other clusters
// cost nothing (each of their files would be opened to read its schema). A cluster is found by
// its unescaped name, however its directory name was escaped.
func datasetDayFiles(dir string, t Table, cluster string, from, to *time.Time) (days []datasetDay, outside bool, err error) {
	tableDir := filepath.Join(dir, t.Name)
	clusterDirs, err := os.ReadDir(tableDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, c := range clusterDirs {
		name, ok := strings.CutPrefix(c.Name(), "cluster=")
		if !ok {
			continue
		}
		if value, err := url.PathUnescape(name); err != nil {
			return nil, false, fmt.Errorf("dataset %s: partition %s: %w", dir, filepath.Join(tableDir, c.Name()), err)
		} else if value != cluster {
			continue
		}
		if isClusterDir, err := isDir(filepath.Join(tableDir, c.Name()), c); err != nil {
			return nil, false, err
		} else if !isClusterDir {
			continue
		}
		dayDirs, err := os.ReadDir(filepath.Join(tableDir, c.Name()))
		if err != nil {
			return nil, false, err
		}
		for _, d := range dayDirs {
			day, ok := strings.CutPrefix(d.Name(), "date=")
			if !ok {
				continue
			}
			in := (from == nil || day >= from.UTC().Format(time.DateOnly)) && (to == nil || day <= to.UTC().Format(time.DateOnly))
			if !in && outside { // one day outside with files is enough to know
				continue
			}
			path := filepath.Join(tableDir, c.Name(), d.Name())
			isDayDir, err := isDir(path, d)
			if err != nil && !in { // a day outside the window is not read: its link may lead nowhere
				continue
			}
			if err != nil {
				return nil, false, err
			} else if !isDayDir {
				continue
			}
			files, err := filepath.Glob(filepath.Join(path, "*.parquet"))
			if err != nil {
				return nil, false, err
			}
			switch {
			case len(files) == 0:
			case in:
				days = append(days, datasetDay{dir: path, files: files})
			default:
				outside = true
			}
		}
	}
	slices.SortFunc(days, func(a, b datasetDay) int { return strings.Compare(filepath.Base(a.dir), filepath.Base(b.dir)) })
	return days, outside, nil
}

// isDir reports whether the directory entry at path is a directory or a symbolic link to one (a
// day moved to another volume and linked back); a link to nothing is an error.
func isDir(path string, e os.DirEntry) (bool, error) {
	if e.Type()&os.ModeSymlink == 0 {
		return e.IsDir(), nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("dataset partition %s: %w", path, err)
	}
	return info.IsDir(), nil
}

// DatasetClusters returns the clusters that have files (of tables of schema) in the dataset dir, sorted.
func DatasetClusters(dir string, schema Schema) ([]string, error) {
	days, err := DatasetDays(dir, schema)
	if err != nil {
		return nil, err
	}
	return ClustersOf(days), nil
}

// ClustersOf returns the clusters of days as DatasetDays sorts them, each once.
func ClustersOf(days []DatasetPartition) []string {
	var clusters []string
	for _, d := range days {
		if len(clusters) == 0 || clusters[len(clusters)-1] != d.Cluster {
			clusters = append(clusters, d.Cluster)
		}
	}
	return clusters
}

// OpenDataset exposes one cluster's days [from, to] (UTC days, inclusive; nil is unbounded) of
// the dataset dir as the kubesift tables, views over its Parquet files in a private in-memory
// DuckDB: the rules and user SQL see the tables they expect. Each view reads the directories of
// the cluster's days alone (datasetDayFiles; for a table with a ChangeTime, the later days that
// hold rows of the window as well), lazily: the other clusters' and days' files are never opened,
// so the cost of opening a cluster's day does not grow with the fleet. Only dir (and the private
// spill directory) is readable once the database is sandboxed (Sandboxed), and a table the
// dataset has no files for is an empty view.
func OpenDataset(ctx context.Context, dir string, schema Schema, cluster string, from, to *time.Time, opt Options) (*DB, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, fmt.Errorf("opening dataset %s: %w", dir, err)
	}
	opt.ReadOnly = true // no tables: the views below stand for them
	memoryLimit := opt.MemoryLimit
	if memoryLimit == "" {
		memoryLimit = DefaultMemoryLimit
	}
	limit, err := ParseMemoryLimit(memoryLimit)
	if err != nil {
		return nil, err
	}
	tableDays, size, outside, err := datasetTableDays(abs, schema, cluster, from, to)
	if err != nil {
		return nil, fmt.Errorf("opening dataset %s: %w", dir, err)
	}
	// the block pool, as for a database file of a quarter of the limit or more (blockPool), Parquet
	// holding the rows in about a third of the file's bytes (the recordings at 10M events: 365 MB
	// against 1.14 GB): all rules over that dataset in 28.2-30.2 s instead of 36.1-38.3 s, its
	// busiest day (206 MB) in 13.7-14.2 s instead of 17.1-18.2 s, the peak 150-260 MiB higher;
	// a day of 7 MB gained nothing and took 30-90 MiB more (BENCHMARKS.md)
	opt.BlockPool = size >= limit/12
	db, err := Open(ctx, InMemory, schema, opt)
	if err != nil {
		return nil, err
	}
	db.OutsideWindow = outside
	// each rule reads the same files' footers again: kept, all rules over the recordings at 10M
	// events took 20.1-24.9 s at 1,276-1,335 MiB instead of 21.9-24.4 s at 1,354-1,436 MiB
	// (BENCHMARKS.md)
	const cacheMetadata = "SET parquet_metadata_cache = true"
	if _, err := db.ExecContext(ctx, cacheMetadata); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening dataset %s (%s): %w", dir, cacheMetadata, err)
	}
	views := make([]string, len(schema))
	var read []datasetDay // the days the views read, of every table
	for i, t := range schema {
		var days []datasetDay
		if views[i], days, err = db.datasetView(ctx, abs, t, cluster, tableDays[i], to); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening dataset %s, table %s: %w", dir, t.Name, withoutStatement{err})
		}
		read = append(read, days...)
	}
	linked, err := linkedDirs(abs, read)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening dataset %s: %w", dir, err)
	}
	allowed := append([]string{abs, db.TempDir()}, linked...)
	// the sandbox reads only these: the dataset, the spill directory, and the directories the
	// dataset's days link to (DuckDB follows a link before it checks the path)
	for i, d := range allowed {
		allowed[i] = quote(d + string(filepath.Separator))
	}
	if _, err := db.ExecContext(ctx, "SET allowed_directories = ["+strings.Join(allowed, ", ")+"]"); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening dataset %s (allowed_directories): %w", dir, err)
	}
	for i, t := range schema {
		if _, err := db.ExecContext(ctx, views[i]); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening dataset %s, table %s: %w", dir, t.Name, err)
		}
	}
	return db, nil
}

// withoutStatement is an error of DuckDB without the text of the statement it appends ("LINE 1:
// SELECT …", a caret under it): for a statement of kubesift's own that reads a dataset's files, the
// file DuckDB names is what the reader needs.
type withoutStatement struct{ err error }

func (e withoutStatement) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\n\nLINE ")
	return msg
}

func (e withoutStatement) Unwrap() error { return e.err }

// linkedDirs returns where the days of a dataset rooted at root lead when they are, or lie in, a
// symbolic link to a directory outside root.
func linkedDirs(root string, days []datasetDay) ([]string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range days {
		real, err := filepath.EvalSymlinks(d.dir)
		if err != nil {
			return nil, fmt.Errorf("dataset partition %s: %w", d.dir, err)
		}
		if rel, err := filepath.Rel(realRoot, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			out = append(out, real)
		}
	}
	return out, nil
}

// columnsInEveryFile returns which of t's columns with a Backfill every one of the n files of
// globs (an SQL list) stores: the view reads those as they are, where a coalesce with the
// Backfill would read the columns it is computed from (the bodies, for body_fields and
// response_rv) in every scan. The names are those of parquet_schema, where a nested field of the
// same name as such a column would count too; t's columns have none.
func (db *DB) columnsInEveryFile(ctx context.Context, globs string, n int, t Table) (map[string]bool, error) {
	var backfilled []string
	for _, c := range t.Columns {
		if c.Backfill != "" {
			backfilled = append(backfilled, quote(c.Name))
		}
	}
	in := map[string]bool{}
	if len(backfilled) == 0 {
		return in, nil
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT name FROM parquet_schema(%s) WHERE name IN (%s)
		GROUP BY name HAVING count(DISTINCT file_name) = %d`, globs, strings.Join(backfilled, ", "), n))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		in[name] = true
	}
	return in, errors.Join(rows.Err(), rows.Close())
}

// datasetView returns the CREATE VIEW statement of t over the files of days, cluster's days of t
// in a window ending at to (nil is unbounded), and the days it reads; for a table derived from
// another, the view of its Derive over that table's view. A table with a ChangeTime reads the
// later days whose files hold rows of the window as well (laterDaysOfWindow).
func (db *DB) datasetView(ctx context.Context, dir string, t Table, cluster string, days []datasetDay, to *time.Time) (view string, read []datasetDay, err error) {
	if t.Derive != "" {
		return fmt.Sprintf("CREATE VIEW %s AS %s", t.Name, t.Derive), nil, nil
	}
	if t.ChangeTime != "" && to != nil {
		later, err := db.laterDaysOfWindow(ctx, dir, t, cluster, *to)
		if err != nil {
			return "", nil, err
		}
		days = append(days, later...)
	}
	// a glob per day rather than a list of files: an export that replaces a day while the rules
	// run may write it in fewer or more files
	var globs []string
	files := 0
	for _, d := range days {
		globs = append(globs, quote(filepath.Join(d.dir, "*.parquet")))
		files += len(d.files)
	}
	present, inEveryFile := map[string]bool{}, map[string]bool{}
	source := "(SELECT 1) WHERE false"
	if t.Evidence != "" && files > 0 {
		list := "[" + strings.Join(globs, ", ") + "]"
		scan := fmt.Sprintf("read_parquet(%s, hive_partitioning = true, union_by_name = true, hive_types = {'cluster': VARCHAR, 'date': DATE})", list)
		rows, err := db.QueryContext(ctx, "SELECT column_name FROM (DESCRIBE SELECT * FROM "+scan+")")
		if err != nil {
			return "", nil, err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return "", nil, err
			}
			present[name] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return "", nil, err
		}
		if inEveryFile, err = db.columnsInEveryFile(ctx, list, files, t); err != nil {
			return "", nil, err
		}
		// the globs name the cluster's days alone: the filter says so to a reader of the view
		source = scan + " WHERE cluster = " + quote(cluster)
	}
	cols := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		value := "NULL" // a column the files predate, or no files
		switch {
		case present[c.Name] && c.Backfill != "" && !inEveryFile[c.Name]:
			// union_by_name reads it as NULL from the files that predate it
			value = fmt.Sprintf(`coalesce("%s", %s)`, c.Name, c.Backfill)
		case present[c.Name]:
			value = `"` + c.Name + `"`
		case c.Backfill != "" && len(present) > 0:
			value = c.Backfill
		case c.Generated != "" && len(present) > 0:
			value = c.Generated
		}
		cols[i] = fmt.Sprintf(`CAST(%s AS %s) AS "%s"`, value, c.Type, c.Name)
	}
	return fmt.Sprintf("CREATE VIEW %s AS SELECT %s FROM %s", t.Name, strings.Join(cols, ", "), source), days, nil
}

// laterDaysRead is how many days after a window a dataset's view reads for the rows of a table with
// a ChangeTime (laterDaysOfWindow): a watch stream saved up to a week after its events (one left
// running over a weekend). Not every later day: a snapshot of an Endpoints that has not changed
// for days holds an old change time too, so the files' statistics put nearly every later day of
// a dataset of snapshots in the window, and a day at the start of a year of 15-minute snapshots of
// 300 Services took 3.25 s instead of 1.58 s (BENCHMARKS.md).
const laterDaysRead = 7

// laterDaysOfWindow returns cluster's days of t among the laterDaysRead after to's day whose files
// hold a row whose ChangeTime is before the end of that day: a watch stream saved days after its
// events, whose rows the export put in the day the file was captured. It reads the files'
// statistics, not their rows; a row group without statistics for the column counts as holding
// such a row.
func (db *DB) laterDaysOfWindow(ctx context.Context, dir string, t Table, cluster string, to time.Time) ([]datasetDay, error) {
	next := to.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	last := next.Add(laterDaysRead*24*time.Hour - time.Nanosecond)
	after, _, err := datasetDayFiles(dir, t, cluster, &next, &last)
	if err != nil || len(after) == 0 {
		return nil, err
	}
	var files []string
	for _, d := range after {
		for _, f := range d.files {
			files = append(files, quote(f))
		}
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT DISTINCT file_name FROM parquet_metadata([%s])
		WHERE path_in_schema = $1 AND (TRY_CAST(stats_min_value AS TIMESTAMPTZ) < $2
			OR (stats_min_value IS NULL AND stats_null_count IS DISTINCT FROM num_values))`, strings.Join(files, ", ")),
		t.ChangeTime, next)
	if err != nil {
		return nil, fmt.Errorf("reading the statistics of %s's later days: %w", t.Name, err)
	}
	holding := map[string]bool{}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			rows.Close()
			return nil, err
		}
		holding[f] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	var days []datasetDay
	for _, d := range after {
		if slices.ContainsFunc(d.files, func(f string) bool { return holding[f] }) {
			days = append(days, d)
		}
	}
	return days, nil
}
