package analyze

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/kubesift/kubesift/tabular"
)

// Formats lists the report formats.
var Formats = []string{"table", "wide", "json", "ndjson", "csv", "xlsx", "parquet", "markdown"}

// WriteContext renders rep in format; ctx cancels the Parquet writer.
func WriteContext(ctx context.Context, w io.Writer, rep *Report, format string) error {
	switch format {
	case "table":
		return writeTable(w, rep, false)
	case "wide":
		return writeTable(w, rep, true)
	case "json":
		return writeJSON(w, rep)
	case "ndjson":
		bw := bufio.NewWriter(w)
		err := formatInOrder(rep, func(_ int, f Finding, buf *bytes.Buffer) error {
			return json.NewEncoder(buf).Encode(f)
		}, func(b []byte) error {
			_, err := bw.Write(b)
			return err
		})
		if err != nil {
			return err
		}
		return bw.Flush()
	case "csv":
		return tabular.CSV(w, FindingsTable(rep))
	case "parquet":
		return tabular.Parquet(ctx, w, FindingsTable(rep))
	case "xlsx":
		return writeXLSX(w, rep)
	case "markdown":
		return writeMarkdown(w, rep)
	}
	return fmt.Errorf("unknown report format %q", format)
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// NamesClusters reports whether any finding names its cluster: the reports show a cluster
// column only then.
func (rep *Report) NamesClusters() (bool, error) {
	err := rep.EachFinding(func(_ int, f Finding) error {
		if f.Cluster != "" {
			return errFound
		}
		return nil
	})
	if err == errFound {
		return true, nil
	}
	return false, err
}

// errFound stops EachFinding at the finding looked for.
var errFound = errors.New("found")

// object names what a finding is about: namespace/name, or the name alone (nodes, cluster scope).
func object(f Finding) string {
	if f.Namespace == "" {
		return f.Name
	}
	return f.Namespace + "/" + f.Name
}

func cut(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	return string([]rune(s)[:width-1]) + "…"
}

// writeTable prints one line per finding that fits 120 columns, with its summary indented
// below, then the rules that failed, were not evaluated, or are blind or partial in a cluster. wide adds last_seen and the evidence count
// and cuts nothing.
func writeTable(w io.Writer, rep *Report, wide bool) error {
	type col struct {
		title string
		width int
		value func(Finding) string
	}
	cols := []col{
		{"SEVERITY", 8, func(f Finding) string { return string(f.Severity) }},
		{"RULE", 26, func(f Finding) string { return f.Rule }},
	}
	// A CLUSTER column when the evidence names clusters; OBJECT and SUBJECT give it room.
	objectWidth, subjectWidth := 26, 25
	namesClusters, err := rep.NamesClusters()
	if err != nil {
		return err
	}
	if namesClusters {
		cols = append(cols, col{"CLUSTER", 16, func(f Finding) string { return f.Cluster }})
		objectWidth, subjectWidth = 18, 15
	}
	cols = append(cols, col{"OBJECT", objectWidth, object}, col{"FIRST SEEN", 20, func(f Finding) string { return rfc3339(f.FirstSeen) }})
	if wide {
		cols = append(cols, col{"LAST SEEN", 20, func(f Finding) string { return rfc3339(f.LastSeen) }})
	}
	cols = append(cols, col{"COUNT", 5, func(f Finding) string { return strconv.FormatInt(f.Count, 10) }})
	if wide {
		cols = append(cols, col{"EVIDENCE", 8, func(f Finding) string { return strconv.Itoa(f.EvidenceCount()) }})
	}
	// The subject comes last and takes what is left of 120 columns.
	cols = append(cols, col{"SUBJECT", subjectWidth, func(f Finding) string { return f.Subject }})
	if wide { // widths fit the content instead
		for i := range cols {
			cols[i].width = utf8.RuneCountInString(cols[i].title)
		}
		err := rep.EachFinding(func(_ int, f Finding) error {
			for i := range cols {
				cols[i].width = max(cols[i].width, utf8.RuneCountInString(cols[i].value(f)))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	line := func(cells []string) string {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == len(cells)-1 {
				b.WriteString(c)
			} else {
				fmt.Fprintf(&b, "%-*s", cols[i].width, c)
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	if rep.NumFindings() == 0 {
		fmt.Fprintln(w, rep.noFindings())
	} else {
		titles := make([]string, len(cols))
		for i, c := range cols {
			titles[i] = c.title
		}
		fmt.Fprintln(w, line(titles))
		err := rep.EachFinding(func(_ int, f Finding) error {
			cells := make([]string, len(cols))
			for i, c := range cols {
				v := c.value(f)
				if !wide {
					v = cut(v, c.width)
				}
				cells[i] = v
			}
			fmt.Fprintln(w, line(cells))
			summary := "    " + f.Summary
			if !wide {
				summary = cut(summary, 120)
			}
			_, err := fmt.Fprintln(w, summary)
			return err
		})
		if err != nil {
			return err
		}
	}
	if n := rep.NumSuppressed(); n > 0 {
		fmt.Fprintf(w, "suppressed: %d (--ignore)\n", n)
		err := rep.EachSuppressed(func(s Suppressed) error {
			_, err := fmt.Fprintf(w, "    %s %s %s: %s (until %s)\n", s.Finding.Severity, s.Finding.Rule, object(s.Finding),
				s.Suppression.Reason, s.Suppression.Expires.UTC().Format(time.DateOnly))
			return err
		})
		if err != nil {
			return err
		}
	}
	for _, msg := range rep.Warnings {
		fmt.Fprintf(w, "warning: %s\n", msg)
	}
	for _, o := range rep.Outcomes {
		if o.Err != nil {
			fmt.Fprintf(w, "failed: %v\n", o.Err)
		}
	}
	for _, line := range rep.CoverageGaps() {
		fmt.Fprintln(w, line)
	}
	return nil
}

type jsonRule struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	Severity  string `json:"severity"`
	Evaluated bool   `json:"evaluated"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	Findings  int    `json:"findings"`
	// Coverage is the rule's coverage per cluster: evaluated, partial, blind or not evaluated.
	Coverage []Coverage `json:"coverage,omitempty"`
}

// writeJSON writes the report as one indented JSON document, a finding at a time (each finding's
// evidence is read back only while it is written): the same bytes as encoding the whole
// document with json.Encoder and SetIndent("", "  ").
func writeJSON(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	window := func(t *time.Time) string {
		if t == nil {
			return "null"
		}
		b, _ := json.Marshal(rfc3339(*t))
		return string(b)
	}
	fmt.Fprintf(bw, "{\n  \"since\": %s,\n  \"until\": %s,\n  \"findings\": [", window(rep.Since), window(rep.Until))
	wrote := false // a finding
	err := formatInOrder(rep, func(i int, f Finding, buf *bytes.Buffer) error {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n    ")
		if err := appendIndented(buf, f, "    "); err != nil {
			return fmt.Errorf("finding %d (%s on %s): %w", i+1, f.Rule, object(f), err)
		}
		return nil
	}, func(b []byte) error {
		wrote = true
		_, err := bw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if wrote {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n")
	if rep.NumSuppressed() > 0 { // as encoding/json indents a list, a finding at a time
		bw.WriteString("  \"suppressed\": [")
		i := 0
		err := rep.EachSuppressed(func(s Suppressed) error {
			b, err := json.MarshalIndent(s, "    ", "  ")
			if err != nil {
				return fmt.Errorf("suppressed finding %d (%s on %s): %w", i+1, s.Finding.Rule, object(s.Finding), err)
			}
			if i > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n    ")
			_, err = bw.Write(b)
			i++
			return err
		})
		if err != nil {
			return err
		}
		bw.WriteString("\n  ],\n")
	}
	rest := struct {
		Warnings []string   `json:"warnings,omitempty"`
		Rules    []jsonRule `json:"rules"`
	}{Warnings: rep.Warnings}
	for _, o := range rep.Outcomes {
		jr := jsonRule{ID: o.Rule.ID, Title: o.Rule.Title, Severity: string(o.Rule.Severity), Evaluated: o.Evaluated, Reason: o.Reason, Findings: o.Findings,
			Coverage: o.Coverage}
		if o.Err != nil {
			jr.Reason, jr.Error = "", o.Err.Error()
		}
		rest.Rules = append(rest.Rules, jr)
	}
	b, err := json.MarshalIndent(rest, "", "  ")
	if err != nil {
		return err
	}
	bw.Write(b[len("{\n"):]) // its fields continue the document's
	bw.WriteString("\n")
	return bw.Flush()
}

// appendIndented appends f to dst as json.MarshalIndent(f, prefix, "  ") writes it: its small
// fields through encoding/json, and its evidence, the bulk of it, escaped and indented by jsontext
// in one pass (MarshalIndent validates, compacts and indents it four times over: 44 of the 190 s
// of an analysis writing 1.35 GB of evidence).
func appendIndented(dst *bytes.Buffer, f Finding, prefix string) error {
	raw, err := f.Evidence()
	if err != nil {
		return err
	}
	type fields Finding // without its MarshalJSON
	b, err := json.MarshalIndent(struct {
		fields
		Evidence json.RawMessage `json:"evidence"`
	}{fields(f), json.RawMessage("0")}, prefix, "  ")
	if err != nil {
		return err
	}
	end := []byte("0\n" + prefix + "}")
	if !bytes.HasSuffix(b, end) {
		return fmt.Errorf("encoding a finding: %q does not end with its evidence", b)
	}
	dst.Write(b[:len(b)-len(end)])
	indented, err := jsontext.AppendFormat(dst.AvailableBuffer(), raw, append(asEncodingJSON,
		jsontext.WithIndentPrefix(prefix+"  "), jsontext.WithIndent("  "))...)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	dst.Write(indented)
	dst.Write(end[1:])
	return nil
}

// asEncodingJSON makes jsontext write a JSON value as encoding/json writes a RawMessage: its
// strings as they are but for <, >, &, U+2028 and U+2029, escaped; duplicate names and invalid
// UTF-8 kept.
var asEncodingJSON = []jsontext.Options{jsontext.PreserveRawStrings(true), jsontext.EscapeForHTML(true), jsontext.EscapeForJS(true),
	jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// FindingsTable is the findings as rows of the contract columns, evidence as JSON: the CSV and
// Parquet reports. The rows are streamed (Table.Scan), each finding's evidence read back as its
// row is written.
func FindingsTable(rep *Report) *tabular.Table {
	return &tabular.Table{Name: "findings", Columns: []tabular.Column{
		{Name: "rule", Type: "VARCHAR"}, {Name: "severity", Type: "VARCHAR"}, {Name: "cluster", Type: "VARCHAR"}, {Name: "namespace", Type: "VARCHAR"},
		{Name: "name", Type: "VARCHAR"}, {Name: "subject", Type: "VARCHAR"}, {Name: "first_seen", Type: "TIMESTAMPTZ"},
		{Name: "last_seen", Type: "TIMESTAMPTZ"}, {Name: "count", Type: "BIGINT"}, {Name: "summary", Type: "VARCHAR"},
		{Name: "evidence", Type: "JSON"},
	}, Scan: func(yield func(row []any) error) error {
		return rep.EachFinding(func(_ int, f Finding) error {
			evidence, err := f.Evidence()
			if err != nil {
				return err
			}
			return yield([]any{f.Rule, string(f.Severity), f.Cluster, f.Namespace, f.Name, f.Subject, f.FirstSeen, f.LastSeen,
				f.Count, f.Summary, evidence})
		})
	}}
}

// noFindings says that the report has no findings, and when rules failed that they may have had
// some: "No findings." alone would read as a clean bill when every rule failed.
func (rep *Report) noFindings() string {
	switch failed := len(rep.Failed()); {
	case failed == 0:
		return "No findings."
	case failed == len(rep.Outcomes):
		return "No findings: every rule failed (see below)."
	default:
		return fmt.Sprintf("No findings from the rules that ran; %d of %d rules failed (see below).", failed, len(rep.Outcomes))
	}
}
