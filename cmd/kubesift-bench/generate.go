package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/kubesift/kubesift/internal/auditgen"
)

func generateAuditLog(stdout io.Writer, dir string, size int64, gz bool, largeBodies float64) (string, error) {
	path := filepath.Join(dir, "audit-bench.log")
	if gz {
		path += ".gz"
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(f)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	start := time.Now()
	st, err := auditgen.Generate(bw, auditgen.Options{Seed: 1, TargetBytes: size, LargeBodyFraction: largeBodies})
	if err == nil {
		err = bw.Flush()
	}
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("generating %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "generated %s: %d events, %d bytes (uncompressed) in %.1fs\n", path, st.Events, st.Bytes, time.Since(start).Seconds())
	return path, nil
}

// generateConntrackDump writes a conntrack -L dump of n probe-like entries, shaped like the
// real capture's lines: TIME_WAIT from many source ports to a few hundred pod ports.
func generateConntrackDump(stdout io.Writer, dir string, n int) (string, error) {
	path := filepath.Join(dir, "conntrack_L.txt")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	states := []string{"TIME_WAIT", "TIME_WAIT", "TIME_WAIT", "TIME_WAIT", "CLOSE", "ESTABLISHED"}
	for i := 0; i < n; i++ {
		state := states[i%len(states)]
		flags := "[ASSURED] "
		timeout := 1 + i%120
		if state == "ESTABLISHED" {
			timeout = 431999 - i%1000
		}
		src := fmt.Sprintf("10.%d.%d.%d", 64+i%8, (i/8)%256, 1+(i/2048)%250)
		dst := fmt.Sprintf("10.200.%d.%d", (i/7)%16, 2+(i/11)%200)
		sport, dport := 32768+(i*7919)%28000, 8080+(i%3)
		fmt.Fprintf(w, "tcp      6 %d %s src=%s dst=%s sport=%d dport=%d src=%s dst=%s sport=%d dport=%d %smark=0 use=1\n",
			timeout, state, src, dst, sport, dport, dst, src, dport, sport, flags)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	fmt.Fprintf(stdout, "generated %s: %d entries\n", path, n)
	return path, f.Close()
}
