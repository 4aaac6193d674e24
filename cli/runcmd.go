package cli

import (
	"context"
	"fmt"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

func runRun(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "run", "PATH...",
		"Ingest PATH... into a temporary in-memory database (or --db) and report what was loaded\n"+
			"per table.")
	fs.StringVar(&c.db, "db", "", "database file to load into and keep (default: temporary, in memory)")
	var f ingestFlags
	addIngestFlags(fs, &f)
	out := addOutputFlag(fs, "table", "table", "json", "csv")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("no PATH given")
	}
	if err := out.validate(); err != nil {
		return err
	}
	opt, err := f.options(e, c.quiet)
	if err != nil {
		return err
	}
	inputs, err := ingest.ExpandPaths(fs.Args())
	if err != nil {
		return err
	}
	path := c.db
	if path == "" {
		path = store.InMemory
	}
	db, err := c.openDB(ctx, path, false)
	if err != nil {
		return err
	}
	defer db.Close()
	_, ingestErr := ingest.New(db, opt).Ingest(ctx, inputs)
	counts, err := tableCounts(ctx, db.DB)
	if err != nil {
		return err
	}
	rs := &resultSet{columns: []string{"table", "rows"}}
	for _, c := range counts {
		rs.rows = append(rs.rows, []any{c[0], c[1]})
	}
	if err := out.write(e.stdout, rs); err != nil {
		return err
	}
	if ingestErr != nil {
		return fmt.Errorf("some inputs could not be loaded:\n%w", ingestErr)
	}
	return nil
}
