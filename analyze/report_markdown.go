package analyze

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/tabular"
)

// MarkdownEvidenceRows caps the evidence table of each finding in the Markdown report.
const MarkdownEvidenceRows = 25

// writeMarkdown writes a report to paste into a postmortem: the window and inputs, a table of
// the findings, then one section per finding with its summary, what to do, references and
// evidence.
func writeMarkdown(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	md := tabular.MarkdownCell

	p("# kubesift report\n\n")
	p("- Window analysed: %s\n", rep.Window())
	first, last, ok, err := rep.Span()
	if err != nil {
		return err
	}
	if ok {
		p("- Findings from %s to %s\n", rfc3339(first), rfc3339(last))
	}
	var inputs []string
	for _, in := range rep.Inputs {
		inputs = append(inputs, fmt.Sprintf("%d %s", in.Rows, in.Table))
	}
	if len(inputs) == 0 {
		inputs = []string{"no rows"}
	}
	p("- Inputs: %s\n", strings.Join(inputs, ", "))
	var evaluated, skipped []string
	for _, o := range rep.Outcomes {
		if o.Evaluated {
			evaluated = append(evaluated, "`"+o.Rule.ID+"`")
		} else {
			skipped = append(skipped, fmt.Sprintf("`%s` (%s)", o.Rule.ID, o.Reason))
		}
	}
	p("- Rules evaluated: %s\n", orNone(evaluated))
	if len(skipped) > 0 {
		p("- Not evaluated: %s\n", strings.Join(skipped, ", "))
	}
	for _, o := range rep.Outcomes {
		if status, reason := o.CoverageSummary(); o.Evaluated && status != rules.Evaluated {
			p("- Coverage of `%s`: %s (%s)\n", o.Rule.ID, status, md(reason))
		}
	}
	if rep.Version != "" {
		p("- kubesift %s; times in UTC\n", rep.Version)
	}
	if rep.HTMLReport != "" {
		p("- HTML report of the same run, with charts: [%s](%s)\n", md(rep.HTMLReport), markdownURL(rep.HTMLReport))
	}

	p("\n## Findings\n\n")
	if rep.NumFindings() == 0 {
		p("%s\n", rep.noFindings())
	} else {
		p("| # | severity | rule | cluster | object | subject | first seen | last seen | count |\n|---|---|---|---|---|---|---|---|---|\n")
		err := rep.EachFinding(func(i int, f Finding) error {
			p("| [%d](#finding-%d) | %s | `%s` | %s | %s | %s | %s | %s | %d |\n", i+1, i+1, f.Severity, f.Rule, md(f.Cluster), md(object(f)),
				md(f.Subject), rfc3339(f.FirstSeen), rfc3339(f.LastSeen), f.Count)
			return nil
		})
		if err != nil {
			return err
		}
	}
	ruleOf := map[string]rules.Rule{}
	for _, o := range rep.Outcomes {
		ruleOf[o.Rule.ID] = o.Rule
	}
	err = rep.EachFinding(func(i int, f Finding) error {
		r := ruleOf[f.Rule]
		p("\n## Finding %d: %s on %s <a id=\"finding-%d\"></a>\n\n", i+1, f.Rule, md(object(f)), i+1)
		p("**%s**", f.Severity)
		if r.Title != "" {
			p(": %s", r.Title)
		}
		if f.Cluster != "" {
			p(". Cluster: %s", md(f.Cluster))
		}
		p(". Subject: %s. Seen %d times from %s to %s.\n\n%s\n", md(f.Subject), f.Count, rfc3339(f.FirstSeen), rfc3339(f.LastSeen),
			tabular.MarkdownText(f.Summary))
		if rem := strings.TrimSpace(r.Remediation); rem != "" {
			p("\n### What to do\n\n%s\n", rem)
		}
		if len(r.References) > 0 {
			p("\n### References\n\n")
			for _, ref := range r.References {
				p("- %s\n", ref)
			}
		}
		ev, err := EvidenceTable(f)
		if err != nil {
			return err
		}
		p("\n### Evidence (%d items)\n\n", f.EvidenceCount())
		if len(ev.Columns) > 0 {
			if err := tabular.Markdown(bw, ev, MarkdownEvidenceRows); err != nil {
				return err
			}
		} else {
			p("None recorded.\n")
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// markdownURL writes a relative file path as a link target: slashes, and spaces and parentheses
// escaped so the link does not end early.
func markdownURL(path string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(filepath.ToSlash(path))
}
