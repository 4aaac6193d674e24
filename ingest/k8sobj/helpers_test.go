package k8sobj

import (
	"os"
	"path/filepath"
	"testing"
)

type badReport struct {
	Line    int
	Off     int64
	Reason  string
	Excerpt string
}

type collector struct {
	rows []Record
	bad  []badReport
}

func (c *collector) Row(r Record) error { c.rows = append(c.rows, r); return nil }
func (c *collector) Bad(line int, off int64, reason, excerpt string) {
	c.bad = append(c.bad, badReport{line, off, reason, excerpt})
}

func (c *collector) table(name string) []Record {
	var out []Record
	for _, r := range c.rows {
		if r.Table() == name {
			out = append(out, r)
		}
	}
	return out
}

func decodeFile(t testing.TB, name string) (Stats, *collector) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &collector{}
	st, err := Decode(name, f, c)
	if err != nil {
		t.Fatalf("Decode(%s): %v", name, err)
	}
	return st, c
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
