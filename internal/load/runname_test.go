package load

import "testing"

func TestRunName(t *testing.T) {
	for n, want := range map[int]string{1: "a.log", 2: "a.log and the 1 file after it", 4: "a.log and the 3 files after it"} {
		if got := RunName("a.log", n); got != want {
			t.Errorf("RunName(a.log, %d) = %q, want %q", n, got, want)
		}
	}
}
