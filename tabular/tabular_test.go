package tabular

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/xuri/excelize/v2"
)

func TestCSVFields(t *testing.T) {
	at := time.Date(2026, 11, 21, 5, 31, 8, 323042000, time.FixedZone("CET", 3600))
	tab := &Table{Columns: []Column{{Name: "a"}, {Name: "b"}}, Rows: [][]any{
		{"=HYPERLINK(\"http://x\")", -5},
		{"-5", "+1.5"},
		{"@SUM(A1)", 2.5e6},
		{"-rf", at},
		{"line\nbreak, \"quoted\"", []any{"x", int64(1)}},
		{nil, true},
	}}
	var b bytes.Buffer
	if err := CSV(&b, tab); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b"},
		{"'=HYPERLINK(\"http://x\")", "-5"},
		{"-5", "+1.5"},
		{"'@SUM(A1)", "2500000"},
		{"'-rf", "2026-11-21T04:31:08.323042Z"},
		{"line\nbreak, \"quoted\"", `["x",1]`},
		{"", "true"},
	}
	if fmt.Sprint(recs) != fmt.Sprint(want) {
		t.Errorf("got  %q\nwant %q", recs, want)
	}
}

func TestSheetNames(t *testing.T) {
	wb, err := NewWorkbook()
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	long := strings.Repeat("very-long-rule-name-", 3)
	got := []string{wb.SheetName("Summary"), wb.SheetName("summary"), wb.SheetName(long), wb.SheetName(long),
		wb.SheetName("a/b:c[d]*?"), wb.SheetName("'quoted'"), wb.SheetName("History")}
	want := []string{"Summary", "summary-2", long[:31], long[:29] + "-2", "a_b_c_d___", "quoted", "History-2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestSheetSplit: a table longer than a sheet continues on NAME-2, NAME-3 with a note, and no
// row is lost.
func TestSheetSplit(t *testing.T) {
	defer func(n int) { MaxSheetRows = n }(MaxSheetRows)
	MaxSheetRows = 10 // header + 8 rows + the note
	tab := &Table{Columns: []Column{{Name: "n"}, {Name: "text"}}}
	for i := range 20 {
		tab.Rows = append(tab.Rows, []any{i, strings.Repeat("x", i)})
	}
	wb, err := NewWorkbook()
	if err != nil {
		t.Fatal(err)
	}
	names, err := wb.AddSheet(Sheet{Name: "rows", Table: tab})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := wb.Write(&buf); err != nil {
		t.Fatal(err)
	}
	wb.Close()
	if fmt.Sprint(names) != "[rows rows-2 rows-3]" {
		t.Errorf("sheets %v", names)
	}
	f, err := excelize.OpenReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	next := 0
	for i, sheet := range names {
		rows, _ := f.GetRows(sheet)
		if rows[0][0] != "n" {
			t.Errorf("%s has no header: %q", sheet, rows[0])
		}
		data := rows[1:]
		if i < len(names)-1 {
			if len(rows) != MaxSheetRows || rows[len(rows)-1][0] != "continued on sheet "+names[i+1]+" (a sheet holds at most 10 rows)" {
				t.Errorf("%s: %d rows, last %q", sheet, len(rows), rows[len(rows)-1])
			}
			data = rows[1 : len(rows)-1]
		}
		for _, r := range data {
			if r[0] != fmt.Sprint(next) {
				t.Errorf("%s: row %q, want %d", sheet, r, next)
			}
			next++
		}
	}
	if next != 20 {
		t.Errorf("%d rows across the sheets, want 20", next)
	}
}

func TestLongCellIsCutWithANote(t *testing.T) {
	wb, err := NewWorkbook()
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	s := wb.cell(strings.Repeat("é", 40000)).(string)
	if n := len([]rune(s)); n != maxCellLength || !strings.HasSuffix(s, "[cut: 40000 characters in all, more than a cell holds; CSV and Parquet keep it whole]") {
		t.Errorf("cut cell: %d characters, ends %q", n, s[len(s)-60:])
	}
}

func TestMarkdownEscapesAndCaps(t *testing.T) {
	tab := &Table{Columns: []Column{{Name: "a|b"}}, Rows: [][]any{{"x|y\nz"}, {"2"}, {"3"}}}
	var b bytes.Buffer
	if err := Markdown(&b, tab, 2); err != nil {
		t.Fatal(err)
	}
	want := "| a\\|b |\n| --- |\n| x\\|y<br>z |\n| 2 |\n\n_2 of 3 rows shown._\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// TestIntervalText: an interval is written as DuckDB casts it to text (the wants are DuckDB
// 1.5's), in every text format and in JSON, not as the Go struct the driver scans it into.
func TestIntervalText(t *testing.T) {
	for _, tt := range []struct {
		iv   duckdb.Interval
		want string
	}{
		{duckdb.Interval{Micros: 55_169_476}, "00:00:55.169476"},
		{duckdb.Interval{Months: 1, Days: 2}, "1 month 2 days"},
		{duckdb.Interval{Months: 14, Days: -3, Micros: -1_500_000}, "1 year 2 months -3 days -00:00:01.5"},
		{duckdb.Interval{Micros: 26*3_600_000_000 + 1}, "26:00:00.000001"},
		{duckdb.Interval{}, "00:00:00"},
	} {
		if got := Text(tt.iv); got != tt.want {
			t.Errorf("Text(%+v) = %q, want %q", tt.iv, got, tt.want)
		}
		if got, err := JSONValue([]any{tt.iv}, false); err != nil || string(got) != `["`+tt.want+`"]` {
			t.Errorf("JSONValue(%+v) = %s, %v", tt.iv, got, err)
		}
	}
}

// TestMarkdownCellEscapesHTML: text in a cell cannot open an HTML element or end the row, and
// ordinary text is written as it is.
func TestMarkdownCellEscapesHTML(t *testing.T) {
	for in, want := range map[string]string{
		`<img src=x onerror=alert(1)></script><script>alert(2)</script>`: `&lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;`,
		"a & b &amp; c":                                    "a &amp; b &amp;amp; c",
		"one\rtwo\r\nthree\nfour | five":                   "one<br>two<br>three<br>four \\| five",
		`kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0`: `kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0`,
		`C:\path`: `C:\\path`,
	} {
		if got := MarkdownCell(in); got != want {
			t.Errorf("MarkdownCell(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := MarkdownText("a <b> & c | d"), "a &lt;b&gt; &amp; c | d"; got != want {
		t.Errorf("MarkdownText = %q, want %q", got, want)
	}
}
