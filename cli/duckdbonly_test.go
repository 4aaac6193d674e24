package cli

import (
	"database/sql"
	"regexp"
	"slices"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" driver, for DuckDB's function catalog

	"github.com/kubesift/kubesift/queries"
	"github.com/kubesift/kubesift/rules"
)

// portableFunctions are the functions of DuckDB's catalog that are not DuckDB-only: the SQL
// standard has them, and Trino (the engine docs/dataset.md reads the dataset with; Athena is
// Trino) has them under the same name with the same arguments and meaning. Every other name in
// duckdb_functions() is DuckDB-only. The DuckDB-only set is derived this way, the catalog minus
// a list, rather than listed, because the catalog holds about a thousand names and grows with
// every DuckDB release: a function a rule starts to use is DuckDB-only until someone checks
// Trino's documentation and adds it here (the test fails closed). Names both engines have with
// another meaning stay out: concat (DuckDB skips NULLs, Trino returns NULL), regexp_replace
// (DuckDB replaces the first match unless given 'g'), format (fmt against Java syntax),
// cardinality (maps only in DuckDB), contains (a string in DuckDB, an array in Trino), date_diff
// (DuckDB counts boundaries crossed, Trino whole units); and so do DuckDB's names for what Trino
// calls otherwise: arg_max (max_by), json_extract_string (json_extract_scalar), strftime
// (date_format), epoch_ms (to_unixtime), list_* (array functions).
var portableFunctions = []string{
	// aggregates
	"any_value", "array_agg", "avg", "bool_and", "bool_or", "count", "count_if", "max", "min", "regr_slope", "sum",
	// window functions
	"dense_rank", "first_value", "lag", "last_value", "lead", "rank", "row_number",
	// scalars
	"abs", "ceil", "ceiling", "date_trunc", "flatten", "floor", "greatest", "json_extract", "least",
	"length", "ln", "lower", "mod", "nullif", "power", "replace", "round", "split_part", "sqrt",
	"starts_with", "strpos", "substr", "substring", "trim", "upper",
}

// duckdbConstructs are DuckDB's syntax beyond standard SQL and Trino, by the name a rule's
// duckdb_only lists them under, each with the pattern that finds it in a query whose comments
// are removed and whose string literals are emptied (”).
var duckdbConstructs = []struct {
	name    string
	pattern *regexp.Regexp
}{
	{"->>", regexp.MustCompile(`->>`)},                                                  // JSON text at a path (Trino: json_extract_scalar)
	{"->", regexp.MustCompile(`->\s*''`)},                                               // JSON at a path; a lambda's -> is Trino's too
	{"::", regexp.MustCompile(`::`)},                                                    // cast (Trino: CAST)
	{"QUALIFY", regexp.MustCompile(`(?i)\bQUALIFY\b`)},                                  // filter on a window function
	{"GROUP BY ALL", regexp.MustCompile(`(?i)\bGROUP\s+BY\s+ALL\b`)},                    // group by every column not aggregated
	{"* REPLACE", regexp.MustCompile(`(?i)\*\s*REPLACE\s*\(`)},                          // star with replaced columns
	{"* EXCLUDE", regexp.MustCompile(`(?i)\*\s*EXCLUDE\b`)},                             // star without some columns
	{"{key: value}", regexp.MustCompile(`\{\s*(\w+|'')\s*:`)},                           // struct literal (Trino: CAST(ROW(...) AS ROW(...)))
	{"[a, b]", regexp.MustCompile(`(?i)(^|[(,=\[]|\b(ELSE|THEN|SELECT|WHEN|IN))\s*\[`)}, // list literal (Trino: ARRAY[...])
	{"[start:end]", regexp.MustCompile(`\[[^\[\]:]*:[^\[\]]*\]`)},                       // list slice (Trino: slice)
	{"TYPE[]", regexp.MustCompile(`\w\[\]`)},                                            // list type (Trino: ARRAY(TYPE))
	{"INTERVAL n UNIT", regexp.MustCompile(`(?i)\bINTERVAL\s+[0-9(]`)},                  // unquoted interval (standard: INTERVAL '1' SECOND)
	{"TIMESTAMPTZ", regexp.MustCompile(`(?i)\bTIMESTAMPTZ\b`)},                          // Trino: TIMESTAMP WITH TIME ZONE
	{"HUGEINT", regexp.MustCompile(`(?i)\bU?HUGEINT\b`)},                                // 128-bit integer (Trino: DECIMAL(38, 0))
	{"ASOF JOIN", regexp.MustCompile(`(?i)\bASOF\s+(LEFT\s+)?JOIN\b`)},                  // the nearest row by an inequality (Trino: a window over a union)
	{"SEMI JOIN", regexp.MustCompile(`(?i)\bSEMI\s+JOIN\b`)},                            // Trino: WHERE EXISTS
	{"ANTI JOIN", regexp.MustCompile(`(?i)\bANTI\s+JOIN\b`)},                            // Trino: WHERE NOT EXISTS
	{"AS MATERIALIZED", regexp.MustCompile(`(?i)\bAS\s+(NOT\s+)?MATERIALIZED\b`)},       // a CTE computed once or inlined (Trino: a plain WITH)
	{"CREATE MACRO", regexp.MustCompile(`(?i)\bCREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+)?MACRO\b`)},
}

var (
	sqlComment   = regexp.MustCompile(`--[^\n]*`)
	sqlString    = regexp.MustCompile(`'(?:[^']|'')*'`)
	sqlQuotedID  = regexp.MustCompile(`"(?:[^"]|"")*"`)
	sqlCall      = regexp.MustCompile(`(?i)\b([a-z_][a-z0-9_]*)\s*\(`)
	sqlFilter    = regexp.MustCompile(`(?i)\bFILTER\s*\(\s*WHERE\b`) // the standard's aggregate filter, not DuckDB's filter()
	macroDefined = regexp.MustCompile(`(?i)\b(MACRO|VIEW)\s+([a-z_][a-z0-9_]*)\s*(\(|AS\b)`)
	sqlName      = regexp.MustCompile(`(?i)\b[a-z_][a-z0-9_]*\b`)
)

// bareSQL is query without comments, with its string literals emptied and its quoted
// identifiers replaced by x, so that nothing inside them reads as a call or construct.
func bareSQL(query string) string {
	query = sqlComment.ReplaceAllString(query, "")
	query = sqlString.ReplaceAllString(query, "''")
	query = sqlQuotedID.ReplaceAllString(query, "x")
	return sqlFilter.ReplaceAllString(query, "FILTER_WHERE (")
}

// duckdbOnlyUses returns the DuckDB-only functions and constructs query uses, with those of the
// macros it calls (macros: each macro's name and its body).
func duckdbOnlyUses(query string, duckdbOnly map[string]bool, macros map[string]definition) []string {
	used := map[string]bool{}
	var walk func(q string, seen map[string]bool)
	walk = func(q string, seen map[string]bool) {
		q = bareSQL(q)
		for _, c := range duckdbConstructs {
			if c.pattern.MatchString(q) {
				used[c.name] = true
			}
		}
		for _, m := range sqlCall.FindAllStringSubmatch(q, -1) {
			name := strings.ToLower(m[1])
			if d, ok := macros[name]; ok && d.macro {
				used["CREATE MACRO"] = true
				if !seen[name] {
					seen[name] = true
					walk(d.body, seen)
				}
				continue
			}
			if duckdbOnly[name] {
				used[name] = true
			}
		}
		for _, n := range sqlName.FindAllString(q, -1) { // a view is read by its name (CREATE VIEW is standard)
			name := strings.ToLower(n)
			if d, ok := macros[name]; ok && !d.macro && !seen[name] {
				seen[name] = true
				walk(d.body, seen)
			}
		}
	}
	walk(query, map[string]bool{})
	return slices.Sorted(func(yield func(string) bool) {
		for n := range used {
			if !yield(n) {
				return
			}
		}
	})
}

// definition is a macro or view of macros.sql: its body, the text up to the next definition.
type definition struct {
	body  string
	macro bool // else a view
}

// splitMacros returns each macro and view of macros.sql by name.
func splitMacros(all string) map[string]definition {
	bare := bareSQL(all)
	locs := macroDefined.FindAllStringSubmatchIndex(bare, -1)
	out := map[string]definition{}
	for i, l := range locs {
		end := len(bare)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[strings.ToLower(bare[l[4]:l[5]])] = definition{body: bare[l[1]:end], macro: strings.EqualFold(bare[l[2]:l[3]], "MACRO")}
	}
	return out
}

// catalogDuckDBOnly returns the names in DuckDB's function catalog that are not portable.
func catalogDuckDBOnly(t *testing.T) map[string]bool {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE internal`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	only := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		only[name] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range portableFunctions {
		if !only[p] {
			t.Errorf("portableFunctions: %q is no function of DuckDB's catalog", p)
		}
		delete(only, p)
	}
	return only
}

// TestRulesMarkTheirDuckDBOnlySQL: every built-in rule's duckdb_only lists exactly the
// DuckDB-only functions and constructs its query, its stages, charts and coverage checks use,
// with those of the macros they call (issue 12: the dataset is read by other engines, and a rule
// marks what does not port).
func TestRulesMarkTheirDuckDBOnlySQL(t *testing.T) {
	only := catalogDuckDBOnly(t)
	macros := splitMacros(queries.Macros())
	if len(macros) == 0 {
		t.Fatal("no macros found in queries/macros.sql")
	}
	rs, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		query := r.SQL
		for _, s := range r.Stages {
			query += "\n" + s.SQL
		}
		for _, c := range r.Charts {
			query += "\n" + c.SQL
		}
		for _, n := range r.Needs {
			query += "\n" + n.SQL
		}
		used := duckdbOnlyUses(query, only, macros)
		listed := slices.Sorted(slices.Values(r.DuckDBOnly))
		for _, u := range used {
			if !slices.Contains(listed, u) {
				t.Errorf("rule %s uses DuckDB-only %q: list it in rules/%s.yaml duckdb_only", r.ID, u, r.ID)
			}
		}
		for _, l := range listed {
			if !slices.Contains(used, l) {
				t.Errorf("rule %s lists %q in duckdb_only, which its query does not use", r.ID, l)
			}
		}
		if !slices.Equal(used, listed) {
			t.Logf("rules/%s.yaml: duckdb_only: [%s]", r.ID, strings.Join(used, ", "))
		}
	}
}

// TestDuckDBOnlyFindsWhatItMarks: the finder sees functions, constructs and the contents of
// macros and views, and nothing in comments or strings.
func TestDuckDBOnlyFindsWhatItMarks(t *testing.T) {
	only := map[string]bool{"arg_max": true, "strftime": true, "list_sort": true}
	macros := splitMacros("CREATE OR REPLACE TEMP MACRO ks_t(x) AS strftime(x, '%Y');\nCREATE TEMP MACRO ks_u(x) AS ks_t(x);\n" +
		"CREATE OR REPLACE TEMP VIEW ks_v AS SELECT list_sort(l) FROM t;")
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"SELECT arg_max(a, b), count(*) FROM t", []string{"arg_max"}},
		{"SELECT max(a) -- arg_max(a, b)\nFROM t WHERE s = 'list_sort(x)'", nil},
		{"SELECT ks_u(a) FROM t", []string{"CREATE MACRO", "strftime"}},
		{"SELECT * FROM ks_v", []string{"list_sort"}},
		{"SELECT * FROM t WHERE v = 'ks_v'", nil},
		{"SELECT a->>'$.b', c::INT, [1, 2], l[1:3], {k: 1} FROM t QUALIFY row_number() OVER () = 1", []string{"->>", "::", "QUALIFY", "[a, b]", "[start:end]", "{key: value}"}},
		{"SELECT count(*) FILTER (WHERE a), l[1] FROM t GROUP BY ALL", []string{"GROUP BY ALL"}},
		{"SELECT * FROM a ASOF LEFT JOIN b ON a.k = b.k AND a.t >= b.t SEMI JOIN c ON c.k = a.k ANTI JOIN d ON d.k = a.k", []string{"ANTI JOIN", "ASOF JOIN", "SEMI JOIN"}},
		{"WITH a AS MATERIALIZED (SELECT 1), b AS NOT MATERIALIZED (SELECT 2) SELECT * FROM a, b", []string{"AS MATERIALIZED"}},
		{"SELECT CAST(a AS HUGEINT) * 2, b::UHUGEINT FROM t WHERE c = 'HUGEINT'", []string{"::", "HUGEINT"}},
	} {
		if got := duckdbOnlyUses(c.query, only, macros); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.query, got, c.want)
		}
	}
}
