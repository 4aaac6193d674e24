package inorder

import "runtime"

// Run takes items from next until it reports that none is left, calls work on each on as
// many goroutines as there are CPUs, and done with the results in the items' order. A few items
// per goroutine are worked on ahead of the one done, so that work overlaps with itself, with
// next and with done, and memory stays that of those few items. next runs on one goroutine of
// its own, done on the caller's. The first error, of next, work or done, stops it and is
// returned, and next is asked for at most one more item after it; every goroutine it started
// has ended when it returns.
func Run[T, R any](next func() (T, bool, error), work func(T) (R, error), done func(R) error) error {
	type result struct {
		value R
		err   error
	}
	workers := runtime.GOMAXPROCS(0)
	pending := make(chan chan result, 2*workers) // in the items' order
	stop := make(chan struct{})
	go func() {
		defer close(pending)
		running := make(chan struct{}, workers)
		for {
			select { // stopped: ask next for no more items (the select below may still take one)
			case <-stop:
				return
			default:
			}
			item, ok, err := next()
			if !ok && err == nil {
				return
			}
			ready := make(chan result, 1)
			select {
			case pending <- ready:
			case <-stop:
				return
			}
			if err != nil {
				ready <- result{err: err}
				return
			}
			running <- struct{}{}
			go func() {
				defer func() { <-running }()
				value, err := work(item)
				ready <- result{value, err}
			}()
		}
	}()
	var err error
	for ready := range pending {
		r := <-ready
		if err == nil {
			if err = r.err; err == nil {
				err = done(r.value)
			}
			if err != nil {
				close(stop)
			}
		}
	}
	return err
}
