package audit

import (
	"bytes"
	"testing"
	"unicode/utf8"

	"github.com/kubesift/kubesift/internal/source"
)

// FuzzChunkToBatches feeds arbitrary chunks to the line splitter: it must not panic, every row
// must be a slice of its batch's bytes and valid UTF-8, lines must stay in order, and every
// line must end up as rows, as a rejected too-long line, or be blank.
//
// The seeds are short lines, one per path through the splitter, not the corpus's files: the
// fuzzer minimizes every input that finds new coverage, at a cost quadratic in its length, and
// minimizing kilobyte events took the target's whole fuzz time (22 executions in 2 minutes).
// Mutations splice the lines together.
func FuzzChunkToBatches(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"Event","auditID":"a1","stage":"ResponseStarted","requestURI":"/api/v1/pods?watch=true&resourceVersion=12&timeoutSeconds=5","verb":"watch"}` + "\n",
		`2026-11-21T05:31:08.312540Z master-1 {"kind":"Event","auditID":"a2","requestURI":"/api/v1/secrets?limit=500&continue=x"}` + "\n",
		`master-1 stdout F {"kind":"Event","auditID":"a3"}` + "\r\n",
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"auditID":"a4"},{"auditID":"a5"}]}` + "\n",
		`{"kind":"Event","auditID":"a6","requestURI":"/api/v1/namespaces/x/serviceaccounts/y/token?token=abc","annotations":{"a":"Bearer abc.def"}}` + "\n",
		`{"kind":"Event","auditID":"a7","objectRef":{"resource":"secrets"},"requestObject":{"data":{"k":"dg=="}}}` + "\n",
		"{\"kind\":\"Event\",\"auditID\":\"a8\xff\",\"user\":{\"username\":\"\xc3\"}}\n",
		"kube-apiserver: this is not JSON at all\n   \n\n{}\n",
		`{"kind":"Event","auditID":"a9","stage":"ResponseComplete" "verb":"get"}`,
	} {
		f.Add([]byte(seed), 1<<20, true)
		f.Add([]byte(seed), 64, false)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxLine int, lists bool) {
		if maxLine <= 0 {
			maxLine = 1
		}
		lines := int64(bytes.Count(data, []byte{'\n'}))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		c := &source.Chunk{Data: bytes.Clone(data), FirstLine: 1}
		batches, rejects, _ := chunkToBatches(c, lineOptions{maxLine: maxLine, lists: lists, redact: true})
		last := int64(0)
		seen := map[int64]bool{}
		for _, b := range batches {
			if b.rows() == 0 {
				t.Fatal("empty batch")
			}
			for i := 0; i < b.rows(); i++ {
				start, end := b.offsets[i], b.offsets[i+1]
				if start > end || int(end) > len(b.values) {
					t.Fatalf("row %d spans [%d,%d) of %d bytes", i, start, end, len(b.values))
				}
				if !utf8.Valid(b.values[start:end]) {
					t.Fatalf("row %d is not valid UTF-8: %q", i, b.values[start:end])
				}
			}
			rec, _ := b.record(1)
			lineCol := rec.Column(1)
			for i := 0; i < int(rec.NumRows()); i++ {
				l := lineCol.(interface{ Value(int) int64 }).Value(i)
				if l < last || l < 1 || l > lines {
					t.Fatalf("line %d after %d (of %d lines)", l, last, lines)
				}
				last = l
				seen[l] = true
			}
			rec.Release()
		}
		for _, r := range rejects {
			if r.Line < 1 || r.Line > lines || seen[r.Line] {
				t.Fatalf("rejected line %d of %d is also a row, or out of range", r.Line, lines)
			}
		}
	})
}
