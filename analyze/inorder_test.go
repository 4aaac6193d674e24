package analyze

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestFormatInOrder: findings formatted on several goroutines, some slower than the ones after
// them, are written in their order; the first error, of format or of write, stops the writing
// there and is returned, and every goroutine has ended when it returns.
func TestFormatInOrder(t *testing.T) {
	const n = 500
	format := func(fail int) func(int, Finding, *bytes.Buffer) error {
		return func(i int, _ Finding, buf *bytes.Buffer) error {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			if i == fail {
				return fmt.Errorf("item %d", i)
			}
			buf.WriteString(strconv.Itoa(i) + ",")
			return nil
		}
	}
	want := func(upTo int) string {
		var b bytes.Buffer
		for i := range upTo {
			b.WriteString(strconv.Itoa(i) + ",")
		}
		return b.String()
	}
	goroutines := runtime.NumGoroutine()
	for _, tt := range []struct {
		name        string
		failFormat  int // the item whose format fails (-1: none)
		failWriteAt int // the write that fails (-1: none)
		want        string
		wantErr     string
	}{
		{"all", -1, -1, want(n), ""},
		{"format fails", 137, -1, want(137), "item 137"},
		{"first format fails", 0, -1, "", "item 0"},
		{"write fails", -1, 200, want(200), "write 200"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			writes := 0
			err := formatInOrder(&Report{findings: make([]Finding, n)}, format(tt.failFormat), func(b []byte) error {
				if writes == tt.failWriteAt {
					return fmt.Errorf("write %d", writes)
				}
				writes++
				got.Write(b)
				return nil
			})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if got.String() != tt.want {
				t.Errorf("wrote %.80q…, want %.80q…", got.String(), tt.want)
			}
		})
	}
	if err := formatInOrder(&Report{}, nil, func([]byte) error { return errors.New("no items, no writes") }); err != nil {
		t.Errorf("no items: %v", err)
	}
	// the formatting goroutines end (those started before an error finish their item)
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		t.Errorf("%d goroutines left running, %d before", g, goroutines)
	}
}
