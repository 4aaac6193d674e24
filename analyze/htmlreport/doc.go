// Package htmlreport writes the findings of an analysis as one self-contained HTML file: a
// header (window, inputs, version, coverage of each rule), a sortable overview, and per finding
// its summary, remediation, references, evidence and the charts its rule declares (rules.Chart),
// drawn server-side as inline SVG with gonum/plot so that the page needs no network and reads
// the same with JavaScript off. WriteTimeline writes one object's timeline (analyze.Timeline) the
// same way, with one chart drawn by the same code.
package htmlreport
