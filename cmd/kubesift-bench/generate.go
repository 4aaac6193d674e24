package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/kubesift/kubesift/internal/auditgen"
)

// writeInput creates path (gzipped when gz) and fills it with write, which returns the events
// and uncompressed bytes it wrote.
func writeInput(stdout io.Writer, path string, gz bool, write func(io.Writer) (events, bytes int64, err error)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(f)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	start := time.Now()
	events, bytes, err := write(bw)
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
		return fmt.Errorf("generating %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "generated %s: %d events, %d bytes (uncompressed) in %.1fs\n", path, events, bytes, time.Since(start).Seconds())
	return nil
}

func inputPath(dir, name string, gz bool) string {
	path := filepath.Join(dir, name)
	if gz {
		path += ".gz"
	}
	return path
}

// generateAuditLog writes the input of the audit mix o.mix: internal/auditgen's log (bench), the
// recordings under o.samples replicated with fresh audit IDs and shifted times (samples), or
// long-lived watch streams of o.chainLength watches each (watchstreams).
func generateAuditLog(stdout io.Writer, dir string, size int64, o options) (string, error) {
	if o.mix == mixWatchStreams {
		clients := watchStreamsClients(size, o.chainLength)
		path := inputPath(dir, fmt.Sprintf("audit-watchstreams-%dx%d.log", clients, o.chainLength), o.gzip)
		return path, writeInput(stdout, path, o.gzip, func(w io.Writer) (int64, int64, error) {
			return writeWatchStreams(w, clients, o.chainLength)
		})
	}
	if o.mix == mixSamples {
		recs, err := readSamples(o.samples)
		if err != nil {
			return "", err
		}
		path := inputPath(dir, "audit-samples.log", o.gzip)
		return path, writeInput(stdout, path, o.gzip, func(w io.Writer) (int64, int64, error) {
			return replicate(w, recs, size)
		})
	}
	path := inputPath(dir, "audit-bench.log", o.gzip)
	return path, writeInput(stdout, path, o.gzip, func(w io.Writer) (int64, int64, error) {
		st, err := auditgen.Generate(w, auditgen.Options{Seed: 1, TargetBytes: size, LargeBodyFraction: o.largeBodies})
		return st.Events, st.Bytes, err
	})
}

// generateCopies writes copies 1..o.copies of the audit log o.input into dir, copy n shifted by
// n times o.shift with fresh audit IDs, each a file of its own: a database of several days is
// loaded from them.
func generateCopies(stdout io.Writer, dir string, o options) error {
	rec, err := readRecording(o.input)
	if err != nil {
		return err
	}
	for n := 1; n <= o.copies; n++ {
		name := strings.TrimSuffix(filepath.Base(o.input), ".gz")
		name = strings.TrimSuffix(name, filepath.Ext(name)) + fmt.Sprintf(".copy%d.log", n)
		path := inputPath(dir, name, o.gzip)
		if err := writeInput(stdout, path, o.gzip, func(w io.Writer) (int64, int64, error) {
			return writeCopy(w, rec, n, time.Duration(n)*o.shift)
		}); err != nil {
			return err
		}
	}
	return nil
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
