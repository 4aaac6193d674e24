package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// StageTablePrefix begins the name of every stage table, so that a stage never shadows one of
// the loaded tables.
const StageTablePrefix = "stage_"

// FindingsStage is the stage table that holds a rule's rows while they are read (a piece's,
// for a rule that runs in pieces); no stage of a rule may take its name.
const FindingsStage = StageTablePrefix + "findings"

var stageTablePattern = regexp.MustCompile(`^` + StageTablePrefix + `[a-z0-9_]+$`)

// sortColumnPattern is the form of a column a stage is sorted by (SortForPieces): a plain name.
var sortColumnPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Stage is a part of a rule's input selected once per analysis, before the rule's pieces run:
// the query stages/<Query>.sql (beside the rule's query) is kept as the table Table in the
// sandbox's own memory (compressed once all the rule's stages are made), which the rule's query
// reads instead of the loaded tables, and which is dropped once the rule has run. A rule that
// runs in pieces stages the narrow rows it needs of the big tables, so that each piece reads those
// instead of scanning every audit event again. A stage may use the rule's params, the window and
// the lookback, never the piece, and may read the stages before it. A transient stage only feeds
// the stages after it (the rule's query never reads it): it is dropped once the rule's stages are
// all made and compressed, before the pieces run, so that rows selected to decide what the pieces
// need hold no memory while they run. A stage with SortForPieces is sorted by those columns when
// the rule will run in more than one piece, as far as can be told (when only its own rows tell,
// it is made, counted and made again sorted; a piece that runs out of memory and splits reads it
// as it was made): a piece's join on them then skips the row groups of the other pieces, where a
// rule in one piece would only pay for the sort.
type Stage struct {
	Table         string   `yaml:"table"`
	Query         string   `yaml:"query"`
	Transient     bool     `yaml:"transient"`
	SortForPieces []string `yaml:"sort_for_pieces"`

	SQL string `yaml:"-"` // the query named by Query
}

// checkStages reports each problem of a rule's stages with bad(i, …), i the stage's index.
func checkStages(stages []Stage, bad func(i int, format string, args ...any)) {
	for i, s := range stages {
		switch {
		case !stageTablePattern.MatchString(s.Table):
			bad(i, "stages[%d]: table %q: want %s followed by lowercase letters, digits and underscores", i, s.Table, StageTablePrefix)
		case s.Table == FindingsStage:
			bad(i, "stages[%d]: table %q holds the rule's rows while they are read: name the stage otherwise", i, s.Table)
		case slices.IndexFunc(stages[:i], func(o Stage) bool { return o.Table == s.Table }) >= 0:
			bad(i, "stages[%d]: table %q staged twice", i, s.Table)
		case s.Transient && i == len(stages)-1:
			bad(i, "stages[%d]: table %q is transient, but no stage follows it to read it", i, s.Table)
		}
		for _, c := range s.SortForPieces {
			if !sortColumnPattern.MatchString(c) {
				bad(i, "stages[%d]: sort_for_pieces: column %q: want a column name of lowercase letters, digits and underscores", i, c)
			}
		}
		if s.Transient && len(s.SortForPieces) > 0 {
			bad(i, "stages[%d]: table %q is transient, dropped before the pieces run: it has nothing to sort for them", i, s.Table)
		}
		if !idPattern.MatchString(s.Query) {
			bad(i, "stages[%d]: query %q: want the name of a file stages/NAME.sql (lowercase words joined by dashes)", i, s.Query)
		}
	}
}

// loadStageSQL reads the queries of r's stages with sqlOf("stages/NAME") and checks that they
// use no parameter but r's params, the window and the lookback.
func loadStageSQL(r *Rule, sqlOf func(string) (string, bool)) []error {
	var errs []error
	params := slices.Clone(WindowParams)
	for _, p := range r.Params {
		params = append(params, p.Name)
	}
	if r.Lookback != "" {
		params = append(params, LookbackParam)
	}
	for i, s := range r.Stages {
		sql, qErrs := loadQuery(r, sqlOf, "stages", i, "stages", s.Query, params)
		errs = append(errs, qErrs...)
		r.Stages[i].SQL = sql
	}
	if len(errs) > 0 {
		return errs
	}
	for i, s := range r.Stages {
		if !s.Transient {
			continue
		}
		names := regexp.MustCompile(`\b` + regexp.QuoteMeta(s.Table) + `\b`)
		if names.MatchString(stripSQLComments(r.SQL)) {
			errs = append(errs, fmt.Errorf("rule %s: stages[%d]: table %q is transient (dropped before the query runs), yet %s.sql reads it", r.ID, i, s.Table, r.ID))
		}
		if !slices.ContainsFunc(r.Stages[i+1:], func(later Stage) bool { return names.MatchString(stripSQLComments(later.SQL)) }) {
			errs = append(errs, fmt.Errorf("rule %s: stages[%d]: table %q is transient, yet no later stage reads it", r.ID, i, s.Table))
		}
	}
	return errs
}

// StageTables returns the tables r's stages make, in order.
func (r Rule) StageTables() []string {
	out := make([]string, len(r.Stages))
	for i, s := range r.Stages {
		out[i] = s.Table
	}
	return out
}

// stagedSQL returns the rule's query and its stages' queries, for the parameter checks.
func (r Rule) stagedSQL() string {
	var b strings.Builder
	b.WriteString(r.SQL)
	for _, s := range r.Stages {
		b.WriteString("\n")
		b.WriteString(s.SQL)
	}
	return b.String()
}
