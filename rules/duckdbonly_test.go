package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestParseDuckDBOnly(t *testing.T) {
	good := string(mustRead(t, "testdata/minimal.good.yaml"))
	r, errs := Parse("testdata/minimal.yaml", []byte(good+"duckdb_only: [arg_max, \"->>\"]\n"))
	if len(errs) != 0 || !slices.Equal(r.DuckDBOnly, []string{"arg_max", "->>"}) {
		t.Errorf("duckdb_only: %v, errors %v", r.DuckDBOnly, errs)
	}
	_, errs = Parse("testdata/minimal.yaml", []byte(good+"duckdb_only: [arg_max, \"\", arg_max]\n"))
	all := joinErrs(errs)
	for _, want := range []string{"duckdb_only[1]: empty", `duckdb_only: "arg_max" listed twice`} {
		if !strings.Contains(all, want) {
			t.Errorf("no error %q in\n%s", want, all)
		}
	}
}
