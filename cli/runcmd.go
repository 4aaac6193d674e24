package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

func runRun(ctx context.Context, e *env, args []string) error {
	fs, c := newFlags(e, "run", "PATH...",
		"Ingest PATH... into a temporary in-memory database (or --db) and analyze it: the findings go\n"+
			"to stdout, what was loaded to stderr. Takes the flags of ingest and analyze.")
	fs.StringVar(&c.db, "db", "", "database file to load into and keep (default: temporary, in memory)")
	var f ingestFlags
	addIngestFlags(fs, &f)
	var a analyzeFlags
	addAnalyzeFlags(fs, &a)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("no PATH given")
	}
	if err := a.output.validate(); err != nil {
		return err
	}
	if _, _, err := a.selectRules(); err != nil { // bad --rule/--set/--rules: fail before loading anything
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
	if !c.quiet {
		counts, err := tableCounts(ctx, db.DB)
		if err != nil {
			return err
		}
		var parts []string
		for _, tc := range counts {
			if tc[1].(int64) > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", tc[1], tc[0]))
			}
		}
		fmt.Fprintf(e.stderr, "loaded: %s\n", strings.Join(parts, ", "))
	}
	if err := a.analyzeAndReport(ctx, e.stdout, db); err != nil {
		if ingestErr != nil {
			return fmt.Errorf("%w\nsome inputs could not be loaded:\n%w", err, ingestErr)
		}
		return err
	}
	if ingestErr != nil {
		return fmt.Errorf("some inputs could not be loaded:\n%w", ingestErr)
	}
	return nil
}
