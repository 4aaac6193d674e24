package load

import (
	"path/filepath"
	"regexp"
	"time"
)

// fileTimeRe matches 2026-11-21T04:28:20Z, 2026-11-21T04-28-20Z, 2026-11-21T04_28_20.123+01:00,
// 2026-11-21T042820Z and 20261121T042820Z, with a zone (Z, ±hh:mm, ±hhmm, ±hh-mm).
var fileTimeRe = regexp.MustCompile(`(\d{4})-?(\d{2})-?(\d{2})[Tt_ ](\d{2})[:\-_]?(\d{2})[:\-_]?(\d{2})(?:[.,](\d{1,9}))?([Zz]|[+-]\d{2}(?:[:\-]?\d{2})?)`)

// TimeFromFileName finds a timestamp with a zone in the base name of a file, such as
// endpoints-2026-11-21T04:28:20Z.json, endpoints-2026-11-21T04-28-20Z.json (dashes, as file
// systems like) or eps-20261121T042820Z.yaml. A time without a zone is not taken (it would be
// guessed wrong by hours); the caller falls back to --at or the file's time. The last match wins.
func TimeFromFileName(name string) (time.Time, bool) {
	base := filepath.Base(name)
	ms := fileTimeRe.FindAllStringSubmatch(base, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		zone := m[8]
		switch {
		case zone == "Z" || zone == "z":
			zone = "Z"
		case len(zone) == 3:
			zone += ":00"
		case len(zone) == 5:
			zone = zone[:3] + ":" + zone[3:]
		case len(zone) == 6:
			zone = zone[:3] + ":" + zone[4:]
		}
		s := m[1] + "-" + m[2] + "-" + m[3] + "T" + m[4] + ":" + m[5] + ":" + m[6]
		if m[7] != "" {
			s += "." + m[7]
		}
		t, err := time.Parse(time.RFC3339Nano, s+zone)
		if err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
