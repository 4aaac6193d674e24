//go:build !duckdb_arrow

package tabular

// kubesift moves rows to and from DuckDB as Arrow (duckdb.NewArrowFromConn), which
// github.com/duckdb/duckdb-go only compiles with the build tag duckdb_arrow. Build and test with
// it, as the README says:
//
//	go build -tags duckdb_arrow -o kubesift .
//	go test -tags duckdb_arrow ./...
var _ = build_kubesift_with_go_build_tags_duckdb_arrow
