// Package queries holds the SQL of kubesift's built-in rules, one file per rule named after the
// rule's id (see package rules), macros.sql, the macros they share, and in charts/ the queries
// that feed rules' charts with data their evidence lacks, in stages/ the parts of their input
// that rules running in pieces select once before the pieces, in coverage/ the queries that
// check per cluster whether the loaded data holds the evidence a rule needs, and in timeline/
// the queries of 'kubesift timeline'. It is a leaf: it only embeds the files.
package queries

import (
	"embed"
	"io/fs"
)

//go:embed *.sql charts/*.sql stages/*.sql timeline/*.sql coverage/*.sql
var files embed.FS

// macrosFile holds the macros the queries share; it is no rule's query.
const macrosFile = "macros.sql"

// Macros returns the CREATE TEMP MACRO statements the queries share (the window bounds,
// evidence times, username lists), to run on the analysis connection before the queries.
func Macros() string {
	b, _ := fs.ReadFile(files, macrosFile)
	return string(b)
}

// SQL returns the query of the rule id, of the chart "charts/NAME", of the stage "stages/NAME",
// of the coverage check "coverage/NAME" or of "timeline/NAME".
func SQL(id string) (string, bool) {
	b, err := fs.ReadFile(files, id+".sql")
	if err != nil || id+".sql" == macrosFile {
		return "", false
	}
	return string(b), true
}
