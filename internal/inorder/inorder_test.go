package inorder

import (
	"errors"
	"math/rand/v2"
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
