// Package queries holds the SQL of kubesift's built-in rules, one file per rule named after the
// rule's id (see package rules), and in charts/ the queries that feed rules' charts with data
// their evidence lacks. It is a leaf: it only embeds the files.
package queries

import (
	"embed"
	"io/fs"
)

//go:embed *.sql charts/*.sql
var files embed.FS

// SQL returns the query of the rule id, or of the chart "charts/NAME".
func SQL(id string) (string, bool) {
	b, err := fs.ReadFile(files, id+".sql")
	if err != nil {
		return "", false
	}
	return string(b), true
}
