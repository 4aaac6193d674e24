package analyze

import (
	"bytes"
	"sync"

	"github.com/kubesift/kubesift/internal/inorder"
)

// formatInOrder calls format for each finding of rep (with its index) and write with each
// finding's bytes, in the findings' order (see inorder.Run): formatting (encoding findings, their
// evidence read back from the spill file) overlaps with writing (a file or pipe) and with itself.
func formatInOrder(rep *Report, format func(i int, f Finding, buf *bytes.Buffer) error, write func(b []byte) error) error {
	type item struct {
		i int
		f Finding
	}
	free := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	next, i := rep.cursor(), 0
	return inorder.Run(func() (item, bool, error) {
		f, ok, err := next()
		i++
		return item{i - 1, f}, ok, err
	}, func(it item) (*bytes.Buffer, error) {
		buf := free.Get().(*bytes.Buffer)
		buf.Reset()
		return buf, format(it.i, it.f, buf)
	}, func(buf *bytes.Buffer) error {
		defer free.Put(buf)
		return write(buf.Bytes())
	})
}
