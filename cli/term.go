package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

func isTerminal(fd uintptr) bool { return term.IsTerminal(int(fd)) }

func readAllLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("longer than %d bytes", limit)
	}
	return b, nil
}

// progressBar shows one bar per file on a terminal: bytes read from disk, lines (events) per
// second, and the time left.
type progressBar struct {
	w     io.Writer
	name  string
	start time.Time
	bar   *progressbar.ProgressBar
}

func newProgressBar(w io.Writer) *progressBar { return &progressBar{w: w} }

func (p *progressBar) Begin(name string, size int64) {
	p.name, p.start = name, time.Now()
	p.bar = progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(name),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSpinnerType(14),
	)
}

func (p *progressBar) Update(diskBytes, lines int64) {
	_ = p.bar.Set64(diskBytes)
	if secs := time.Since(p.start).Seconds(); secs > 0 {
		p.bar.Describe(fmt.Sprintf("%s %d lines (%.0f/s)", p.name, lines, float64(lines)/secs))
	}
}

func (p *progressBar) End() { _ = p.bar.Finish() }
