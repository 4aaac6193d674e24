package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type replicatedEvent struct {
	AuditID                  string    `json:"auditID"`
	Stage                    string    `json:"stage"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// TestReplicateSamples replicates the real recordings into three rounds and checks that every
// (auditID, stage) is unique, that the stages of one request still share their ID within a copy,
// that each recording's copies follow each other in time, shifted by whole periods, and that
// everything but the ID and the times is copied byte for byte.
func TestReplicateSamples(t *testing.T) {
	recs, err := readSamples(filepath.Join("..", "..", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	var round int64
	for _, r := range recs {
		round += int64(len(r.data))
	}
	var out bytes.Buffer
	events, written, err := replicate(&out, recs, 2*round+1)
	if err != nil {
		t.Fatal(err)
	}
	if written != int64(out.Len()) || written < 2*round {
		t.Fatalf("wrote %d bytes (buffer %d), want at least %d", written, out.Len(), 2*round)
	}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 16<<20)
	seen := map[[2]string]bool{}
	var total int64
	for n := 0; n < 3; n++ {
		for k, r := range recs {
			if n == 2 && k > 0 {
				break // the third round holds only the line that passes the size
			}
			ids := map[string]string{} // original auditID -> this copy's
			for i, ev := range r.events {
				if n == 2 && i > 0 {
					break
				}
				if !sc.Scan() {
					t.Fatalf("output ends in round %d of %s", n, r.name)
				}
				total++
				line := sc.Bytes()
				var got, orig replicatedEvent
				if err := json.Unmarshal(line, &got); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(r.data[ev.line.start:ev.line.end], &orig); err != nil {
					t.Fatal(err)
				}
				key := [2]string{got.AuditID, got.Stage}
				if seen[key] {
					t.Fatalf("%s copy %d: auditID %s stage %s repeated", r.name, n, got.AuditID, got.Stage)
				}
				seen[key] = true
				if prev, ok := ids[orig.AuditID]; ok && prev != got.AuditID {
					t.Errorf("%s copy %d: stages of request %s got IDs %s and %s", r.name, n, orig.AuditID, prev, got.AuditID)
				}
				ids[orig.AuditID] = got.AuditID
				shift := time.Duration(n) * r.period()
				if !got.RequestReceivedTimestamp.Equal(orig.RequestReceivedTimestamp.Add(shift)) || !got.StageTimestamp.Equal(orig.StageTimestamp.Add(shift)) {
					t.Fatalf("%s copy %d: times %v, %v; want the original's shifted by %v", r.name, n, got.RequestReceivedTimestamp, got.StageTimestamp, shift)
				}
				if n > 0 && !got.RequestReceivedTimestamp.After(r.last.Add(time.Duration(n-1)*r.period())) {
					t.Fatalf("%s copy %d starts at %v, before copy %d ends", r.name, n, got.RequestReceivedTimestamp, n-1)
				}
				if len(line) != ev.line.end-ev.line.start-1 || !bytes.Equal(line[:ev.auditID.start-ev.line.start], r.data[ev.line.start:ev.auditID.start]) ||
					!bytes.Equal(line[ev.stage.end-ev.line.start:], bytes.TrimSuffix(r.data[ev.stage.end:ev.line.end], []byte("\n"))) {
					t.Fatalf("%s copy %d line %d differs beyond the ID and the times:\n%s", r.name, n, i+1, line)
				}
			}
		}
	}
	if sc.Scan() || total != events {
		t.Errorf("%d events written, %d checked", events, total)
	}
}

// TestReadRecordingErrors: a line that is not an event with an ID and times is an error naming
// the file and line.
func TestReadRecordingErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"noid.log":   `{"stage":"ResponseComplete","requestReceivedTimestamp":"2026-11-21T00:00:00Z","stageTimestamp":"2026-11-21T00:00:00Z"}` + "\n",
		"broken.log": `{"auditID":"1","stage":"ResponseComplete","requestReceivedTimestamp":"2026-11-21T00:00:00Z","stageTimestamp":"2026-11-21T00:00:00Z"}` + "\n{\"auditID\":\n",
		"empty.log":  "\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readRecording(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
		if name == "broken.log" && !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: %v, want line 2", name, err)
		}
	}
}
