package tabular

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// UTF8BOM starts the CSV files kubesift writes to disk (--out, export), so that Excel reads them
// as UTF-8 rather than the Windows code page. Standard output gets none: scripts read it.
const UTF8BOM = "\ufeff"

// CSV writes t as RFC 4180 CSV in UTF-8: a header row, fields quoted when needed, LF line ends
// (embedded newlines are kept as they are). Times are RFC3339 UTC, numbers plain digits, lists,
// maps and JSON compact JSON text. Text that a spreadsheet would run as a formula (starting with
// = + - @, tab or carriage return, and not a number) gets a leading apostrophe.
func CSV(w io.Writer, t *Table) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.ColumnNames()); err != nil {
		return err
	}
	rec := make([]string, len(t.Columns))
	err := t.Each(func(row []any) error {
		for i, v := range row {
			rec[i] = CSVField(v)
		}
		return cw.Write(rec)
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// CSVField is a value's CSV text (see CSV).
func CSVField(v any) string {
	s := Text(v)
	if _, isText := v.(string); isText {
		return DefuseFormula(s)
	}
	return s
}

// DefuseFormula prefixes an apostrophe to text that spreadsheets would evaluate as a formula
// (OWASP "CSV injection"); text that reads as a number ("-5", "+1.5") is left alone.
func DefuseFormula(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return s
	}
	return "'" + s
}

// MarkdownCell escapes text for a Markdown table cell: pipes and backslashes escaped, newlines as
// <br>, and <, > and & as HTML entities, so that text from the evidence (a user agent, an
// object's name) neither ends the cell nor puts HTML in the rendered page.
func MarkdownCell(s string) string { return markdownCell.Replace(s) }

var markdownCell = strings.NewReplacer(`\`, `\\`, "|", `\|`, "&", "&amp;", "<", "&lt;", ">", "&gt;",
	"\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// MarkdownText escapes text for a Markdown paragraph: <, > and & as HTML entities, so that text
// from the evidence cannot put HTML in the rendered page.
func MarkdownText(s string) string { return markdownText.Replace(s) }

var markdownText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Markdown writes t as a GitHub-flavoured Markdown table. With limit > 0 it writes at most limit
// rows and then says how many were left out; cells longer than 200 characters are cut with "…".
func Markdown(w io.Writer, t *Table, limit int) error {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range t.Columns {
		b.WriteString(" " + MarkdownCell(c.Name) + " |")
	}
	b.WriteString("\n|")
	for range t.Columns {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	n := 0
	err := t.Each(func(row []any) error {
		n++
		if limit > 0 && n > limit {
			return nil
		}
		b.Reset()
		b.WriteString("|")
		for _, v := range row {
			b.WriteString(" " + MarkdownCell(cutRunes(Text(v), 200)) + " |")
		}
		b.WriteString("\n")
		_, err := io.WriteString(w, b.String())
		return err
	})
	if err != nil {
		return err
	}
	if limit > 0 && n > limit {
		_, err = fmt.Fprintf(w, "\n_%d of %d rows shown._\n", limit, n)
	}
	return err
}

func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
