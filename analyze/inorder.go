package analyze

import (
	"bytes"
	"sync"

	"github.com/kubesift/kubesift/internal/inorder"
)

// formatInOrder calls format for each of n items and write with each item's bytes, in the
// items' order (see inorder.Run): formatting (encoding findings, their evidence read back from the
// spill file) overlaps with writing (a file or pipe) and with itself.
func formatInOrder(n int, format func(i int, buf *bytes.Buffer) error, write func(b []byte) error) error {
	free := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	i := 0
	return inorder.Run(func() (int, bool, error) {
		i++
		return i - 1, i <= n, nil
	}, func(i int) (*bytes.Buffer, error) {
		buf := free.Get().(*bytes.Buffer)
		buf.Reset()
		return buf, format(i, buf)
	}, func(buf *bytes.Buffer) error {
		defer free.Put(buf)
		return write(buf.Bytes())
	})
}
