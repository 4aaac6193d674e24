package load

import (
	"testing"
	"time"
)

func TestTimeFromFileName(t *testing.T) {
	want := time.Date(2026, 11, 21, 4, 28, 20, 0, time.UTC)
	for _, name := range []string{
		"endpoints-2026-11-21T04:28:20Z.json",
		"/tmp/snap/endpoints-2026-11-21T04-28-20Z.json",
		"eps-20261121T042820Z.yaml",
		"eps_2026-11-21T042820Z.yaml",
		"2026-11-21T05-28-20+01-00-endpoints.json",
		"x-2026-11-21T05:28:20+01:00.json",
		"x-2026-11-21T06_28_20+0200.json",
		"x-2026-11-21t04:28:20z.json",
	} {
		got, ok := TimeFromFileName(name)
		if !ok || !got.Equal(want) {
			t.Errorf("TimeFromFileName(%q) = %v, %v", name, got, ok)
		}
	}
	if got, ok := TimeFromFileName("a-2026-11-21T04-28-20.5Z.json"); !ok || !got.Equal(want.Add(500*time.Millisecond)) {
		t.Errorf("fraction: %v %v", got, ok)
	}
	for _, name := range []string{"endpoints.json", "endpoints-2026-11-21T04-28-20.json", "x-2026-13-21T04:28:20Z.json", "2026-11-21T04:28:20Z/endpoints.json", "20261121.json"} {
		if got, ok := TimeFromFileName(name); ok {
			t.Errorf("TimeFromFileName(%q) = %v, want no time", name, got)
		}
	}
}
