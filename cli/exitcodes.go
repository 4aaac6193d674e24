package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kubesift/kubesift/ingest"
)

// Exit codes. Scripts and CronJobs rely on them; exitCodes documents them (-h, README).
const (
	ExitOK          = 0 // the command ran
	ExitError       = 1 // the command failed (database error, unreadable SQL, ...)
	ExitUsage       = 2 // the command line was wrong (unknown verb, flag or flag value)
	ExitFindings    = 3 // findings at or above --fail-on (analyze, run)
	ExitRejects     = 4 // loaded, but lines were rejected into ingest_errors (ingest, run; only with --strict)
	ExitPartial     = 5 // some inputs could not be read or some rules failed; the rest was loaded and analyzed
	ExitAllRejected = 6 // a file had every line rejected: it is not what it seemed (ingest, run)
	// ExitInterrupted is the shell's code for a command ended by SIGINT (128+2); SIGTERM ends it
	// with it too.
	ExitInterrupted = 130
)

// exitCodes documents the codes; when several apply, the first in this list that applies wins.
var exitCodes = []exitCodeDoc{
	{ExitUsage, "bad command line (unknown verb, flag or flag value)"},
	{ExitInterrupted, "interrupted (SIGINT, SIGTERM): the files loaded before are kept, the one being loaded is not (nor the small files loaded with it)"},
	{ExitError, "failed: a database error, bad SQL, every rule failed"},
	{ExitPartial, "partial: some inputs could not be read or some rules failed; the rest was loaded and analyzed"},
	{ExitAllRejected, "a file had every line rejected (see ingest_errors)"},
	{ExitRejects, "loaded with rejected lines (see ingest_errors); only with --strict"},
	{ExitFindings, "findings at or above --fail-on"},
	{ExitOK, "done"},
}

type exitCodeDoc struct {
	code int
	doc  string
}

// exitError carries an exit code other than ExitError to main.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// exitCode returns the exit code err stands for.
func exitCode(err error) int {
	var ee exitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, new(usageError)):
		return ExitUsage
	case errors.As(err, &ee):
		return ee.code
	}
	return ExitError
}

// precedence orders codes as exitCodes lists them (lower first).
func precedence(code int) int {
	for i, c := range exitCodes {
		if c.code == code {
			return i
		}
	}
	return -1
}

// worst returns the error of the code that wins (see exitCodes); nil when both are nil.
func worst(a, b error) error {
	if a == nil || (b != nil && precedence(exitCode(b)) < precedence(exitCode(a))) {
		return b
	}
	return a
}

// loadStatus turns what ingest did into the run's error: unreadable inputs (partial), files
// with every line rejected, and with strict any rejected line.
func loadStatus(results []ingest.FileResult, ingestErr error, strict bool) error {
	if ingestErr != nil {
		return exitError{ExitPartial, fmt.Errorf("some inputs could not be loaded:\n%w", ingestErr)}
	}
	var allRejected []string
	var rejected, files int64
	for _, r := range results {
		if r.Rejected > 0 && r.Rows == 0 && r.Rejected == r.Lines {
			allRejected = append(allRejected, fmt.Sprintf("%s: all %d lines rejected", r.Path, r.Lines))
		}
		if r.Rejected > 0 {
			rejected += r.Rejected
			files++
		}
	}
	switch {
	case len(allRejected) > 0:
		return exitError{ExitAllRejected, fmt.Errorf("%s (see table ingest_errors)", strings.Join(allRejected, "; "))}
	case strict && rejected > 0:
		return exitError{ExitRejects, fmt.Errorf("--strict: %d lines rejected in %d files (see table ingest_errors)", rejected, files)}
	}
	return nil
}

// printExitCodes writes the table of exit codes, in numeric order.
func printExitCodes(w io.Writer) {
	fmt.Fprintf(w, "\nExit codes (when several apply, the first listed here wins: %s):\n", exitCodePrecedence())
	for _, c := range exitCodesByNumber() {
		fmt.Fprintf(w, "  %d  %s\n", c.code, c.doc)
	}
}

// exitCodePrecedence lists the exit codes in the order in which they win when several apply:
// exitCodes' order.
func exitCodePrecedence() string {
	codes := make([]string, len(exitCodes))
	for i, c := range exitCodes {
		codes[i] = strconv.Itoa(c.code)
	}
	return strings.Join(codes, ", ")
}

func exitCodesByNumber() []exitCodeDoc {
	byCode := slices.Clone(exitCodes)
	slices.SortFunc(byCode, func(a, b exitCodeDoc) int { return cmp.Compare(a.code, b.code) })
	return byCode
}
