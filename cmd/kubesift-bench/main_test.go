package main

import (
	"errors"
	"io"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GB": 1e9, "512MB": 512e6, "2GiB": 2 << 30, "1.5 kb": 1500, "4096": 4096} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "0", "ten"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--kind", "pcap"}, {"--runs", "0"}, {"--generate-only"}, {"extra"}, {"--no-such-flag"}} {
		if _, err := parseFlags(args, io.Discard); !errors.As(err, new(usageError)) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if o, err := parseFlags([]string{"--kind", "conntrack", "--entries", "10"}, io.Discard); err != nil || o.kind != "conntrack" || o.entries != 10 {
		t.Errorf("good flags: %+v, %v", o, err)
	}
}
