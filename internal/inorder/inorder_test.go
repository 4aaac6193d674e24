package inorder

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// TestRunStopsAtNextsError: an error of next (a row that cannot be read) stops the items
// there: those before it are done in order, none after it is asked for, and the error is
// returned.
func TestRunStopsAtNextsError(t *testing.T) {
	asked, done := 0, []int{}
	err := Run(func() (int, bool, error) {
		asked++
		if asked == 40 {
			return 0, false, errors.New("row 40")
		}
		return asked, true, nil
	}, func(i int) (int, error) {
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		return i * 10, nil
	}, func(v int) error {
		done = append(done, v)
		return nil
	})
	if err == nil || err.Error() != "row 40" {
		t.Errorf("error %v, want row 40", err)
	}
	if asked != 40 {
		t.Errorf("next was called %d times, want 40", asked)
	}
	for i, v := range done {
		if v != (i+1)*10 {
			t.Fatalf("done %v, want 10, 20, … 390", done)
		}
	}
	if len(done) != 39 {
		t.Errorf("%d items done, want 39", len(done))
	}
}

// TestRunStopsAtDonesError: an error of done (a load that stops taking batches) stops the items
// there: it is returned, and next is asked for no more than the items already in line then (2
// per CPU), the one it was reading and one more, not for the rest of the stream.
func TestRunStopsAtDonesError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for range 50 {
		asked, done := 0, 0
		err := Run(func() (int, bool, error) {
			asked++
			return asked, asked <= 1000, nil
		}, func(i int) (int, error) {
			time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
			return i, nil
		}, func(int) error {
			done++
			if done == 5 {
				return errors.New("stopped")
			}
			return nil
		})
		if err == nil || err.Error() != "stopped" {
			t.Fatalf("error %v, want stopped", err)
		}
		if limit := 5 + 2*2 + 2; asked > limit {
			t.Fatalf("next was called %d times after done's error at item 5, want at most %d", asked, limit)
		}
	}
}
