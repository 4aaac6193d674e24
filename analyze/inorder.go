package analyze

import (
	"bytes"
	"runtime"
	"sync"
)

// formatInOrder calls format for each of n items on as many goroutines as there are CPUs, and
// write with each item's bytes in the items' order. A few items per goroutine are formatted
// ahead of the one being written, so that formatting (encoding findings, their evidence read
// back from the spill file) overlaps with writing (a file or pipe) and with itself, and memory
// stays that of those few items. The first error, of format or write, stops it and is returned.
func formatInOrder(n int, format func(i int, buf *bytes.Buffer) error, write func(b []byte) error) error {
	type result struct {
		buf *bytes.Buffer
		err error
	}
	workers := runtime.GOMAXPROCS(0)
	pending := make(chan chan result, 2*workers) // in the items' order
	stop := make(chan struct{})
	free := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	go func() {
		defer close(pending)
		running := make(chan struct{}, workers)
		for i := range n {
			done := make(chan result, 1)
			select {
			case pending <- done:
			case <-stop:
				return
			}
			running <- struct{}{}
			go func() {
				defer func() { <-running }()
				buf := free.Get().(*bytes.Buffer)
				buf.Reset()
				done <- result{buf, format(i, buf)}
			}()
		}
	}()
	var err error
	for done := range pending {
		r := <-done
		if err == nil {
			if err = r.err; err == nil {
				err = write(r.buf.Bytes())
			}
			if err != nil {
				close(stop)
			}
		}
		free.Put(r.buf)
	}
	return err
}
