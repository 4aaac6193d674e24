// Package queries holds the SQL of kubesift's built-in rules, one file per rule named after the
// rule's id (see package rules), and macros.sql, the macros they share. It is a leaf: it only
// embeds the files.
package queries

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.sql
var files embed.FS

// macrosFile holds the macros the queries share; it is no rule's query.
const macrosFile = "macros.sql"

// Macros returns the CREATE TEMP MACRO statements the queries share (the window bounds,
// evidence times, username lists), to run on the analysis connection before the queries.
func Macros() string {
	b, _ := fs.ReadFile(files, macrosFile)
	return string(b)
}

// SQL returns the query of the rule id.
func SQL(id string) (string, bool) {
	b, err := fs.ReadFile(files, id+".sql")
	if err != nil || id+".sql" == macrosFile {
		return "", false
	}
	return string(b), true
}

// IDs lists the rules that have a query, sorted.
func IDs() []string {
	entries, _ := fs.ReadDir(files, ".")
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".sql"); ok && e.Name() != macrosFile {
			ids = append(ids, id)
		}
	}
	return ids
}
