package analyze

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"
)

// RuleProfile is what one rule cost: the wall time of its query (with reading the findings) and
// the peak resident memory of the process while it ran (0 when unknown).
type RuleProfile struct {
	Elapsed time.Duration
	PeakRSS int64 // bytes
	// Pieces is how many pieces a rule that runs in pieces ran in (0 for any other rule), and Splits
	// how many of them ran out of memory and ran again as smaller pieces (see runPieceOrSplit).
	Pieces, Splits int64
}

// peakRSS measures the process's peak resident memory from one resetPeakRSS to the next read:
// Linux keeps it as VmHWM in /proc/self/status, and writing 5 to /proc/self/clear_refs resets it
// to the current resident size. Elsewhere the peak is unknown (0).
type peakRSS struct{ ok bool }

func (p *peakRSS) reset() {
	p.ok = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

func (p *peakRSS) read() int64 {
	if !p.ok {
		return 0
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// WriteProfile prints each rule's wall time, peak memory, findings and pieces (analyze --profile), and
// on the last line their total time and the highest of their peaks: the peak of the whole analysis,
// which the process's own high-water mark (time's %M) no longer shows once the rules reset it.
func (rep *Report) WriteProfile(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rule\ttime\tpeak RSS\tfindings\tpieces\t")
	var total time.Duration
	var highest int64
	for _, o := range rep.Outcomes {
		highest = max(highest, o.Profile.PeakRSS)
		state := strconv.Itoa(o.Findings)
		switch {
		case o.Err != nil:
			state = "failed"
		case !o.Evaluated:
			state = "not evaluated"
		}
		fmt.Fprintf(tw, "%s\t%.2f s\t%s\t%s\t%s\t\n", o.Rule.ID, o.Profile.Elapsed.Seconds(), mebibytes(o.Profile.PeakRSS), state, o.Profile.pieces())
		total += o.Profile.Elapsed
	}
	fmt.Fprintf(tw, "all rules\t%.2f s\t%s\t\t\t\n", total.Seconds(), mebibytes(highest))
	return tw.Flush()
}

// pieces shows the pieces a rule ran in and, when some ran out of memory, how many were split:
// empty for a rule that does not run in pieces.
func (p RuleProfile) pieces() string {
	switch {
	case p.Pieces == 0:
		return ""
	case p.Splits == 0:
		return strconv.FormatInt(p.Pieces, 10)
	}
	return fmt.Sprintf("%d (%d split)", p.Pieces, p.Splits)
}

// mebibytes shows a peak in MiB, or "-" when it is unknown.
func mebibytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
