package k8sobj

import (
	"fmt"
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

func TestDumpFixtures(t *testing.T) {
	if os.Getenv("K8SOBJ_DUMP") == "" {
		t.Skip("set K8SOBJ_DUMP=1 to print what each fixture decodes to")
	}
	files, _ := filepath.Glob("testdata/*")
	for _, f := range files {
		st, c := decodeFile(t, filepath.Base(f))
		fmt.Printf("== %s %+v\n", f, st)
		for _, r := range c.rows {
			fmt.Printf("   %s %v\n", r.Table(), r.Values())
		}
		for _, b := range c.bad {
			fmt.Printf("   BAD %+v\n", b)
		}
	}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
