package audit

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestPreCheckKeepsEveryEndpointsWrite reads every event of the real recordings under samples/
// and checks that the deriver's cheap pre-check (mayNameEndpoints) never turns away an event
// endpointWrite takes: the endpoint states derived with the pre-check are those derived without.
func TestPreCheckKeepsEveryEndpointsWrite(t *testing.T) {
	files, err := filepath.Glob("../../samples/*/audit.log*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no audit logs under samples/")
	}
	var events, writes, passed int
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		if filepath.Ext(name) == ".gz" {
			if r, err = gzip.NewReader(f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Bytes()
			start := jsonStart(text)
			if start < 0 {
				continue
			}
			event := text[start:]
			events++
			if mayNameEndpoints(event) {
				passed++
			}
			if _, ok := endpointWrite(event); ok {
				writes++
				if !mayNameEndpoints(event) {
					t.Errorf("%s line %d: the pre-check skips an endpoints write", name, line)
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
	}
	if writes == 0 {
		t.Fatalf("no endpoints writes in %d events of %d files: the test checks nothing", events, len(files))
	}
	t.Logf("%d events in %d files: %d endpoints writes, %d pass the pre-check", events, len(files), writes, passed)
}

// TestPreCheckSkipsOtherEvents: an event that names no endpoints is turned away before its
// members are read; one whose objectRef names them passes.
func TestPreCheckSkipsOtherEvents(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"kind":"Event","stage":"ResponseComplete","verb":"get","objectRef":{"resource":"pods","namespace":"a","name":"b"}}`:                              false,
		`{"kind":"Event","stage":"ResponseComplete","verb":"update","objectRef":{"resource":"endpoints","namespace":"a","name":"b"}}`:                      true,
		`{"kind":"Event","stage":"ResponseComplete","verb":"update","objectRef":{"resource":"endpointslices","apiGroup":"discovery.k8s.io","name":"b-x"}}`: true,
	} {
		if got := mayNameEndpoints([]byte(raw)); got != want {
			t.Errorf("mayNameEndpoints(%s) = %v, want %v", raw, got, want)
		}
	}
}
