package conntrack_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// TestSysctlCopiesLoadAsSettings: in a capture bundle, a bare number in a file named after a
// conntrack sysctl (a copy of /proc/sys/net/netfilter/nf_conntrack_max) is that setting, not
// conntrack -C's count; conntrack_C.txt stays the count, and sysctl -a output, whose conntrack
// lines come after every other sysctl, is read for its conntrack lines.
func TestSysctlCopiesLoadAsSettings(t *testing.T) {
	root := t.TempDir()
	bundle := filepath.Join(root, "node-a", "2026-11-21T06:00:00Z")
	all := filepath.Join(root, "node-b", "2026-11-21T06:00:00Z")
	for path, content := range map[string]string{
		filepath.Join(bundle, "nf_conntrack_max"):                   "262144\n",
		filepath.Join(bundle, "nf_conntrack_buckets.txt"):           "65536\n",
		filepath.Join(bundle, "net.netfilter.nf_conntrack_count"):   "13000\n",
		filepath.Join(bundle, "nf_conntrack_tcp_timeout_time_wait"): "120\n",
		filepath.Join(bundle, "conntrack_C.txt"):                    "12990\n",
		filepath.Join(all, "node-sysctls.txt"): "abi.vsyscall32 = 1\ndev.cdrom.info =\nkernel.pid_max = 4194304\n" +
			"net.netfilter.nf_conntrack_count = 900\nnet.netfilter.nf_conntrack_max = 1000\nvm.swappiness = 60\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "test.duckdb"), ingest.Schema(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inputs, err := ingest.ExpandPaths([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	results, err := ingest.New(db, ingest.Options{}).Ingest(ctx, inputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Skipped != "" || r.Rejected != 0 || r.Rows == 0 {
			t.Errorf("%s: skipped %q, %d rows, %d rejected", r.Path, r.Skipped, r.Rows, r.Rejected)
		}
	}
	for _, c := range []struct {
		query string
		want  int64
	}{
		{"SELECT nf_conntrack_max FROM conntrack_limits WHERE source_file LIKE '%/nf_conntrack_max' AND format = 'sysctl' AND nf_conntrack_count IS NULL", 262144},
		{"SELECT nf_conntrack_buckets FROM conntrack_limits WHERE source_file LIKE '%/nf_conntrack_buckets.txt' AND format = 'sysctl'", 65536},
		{"SELECT nf_conntrack_count FROM conntrack_limits WHERE source_file LIKE '%/net.netfilter.nf_conntrack_count' AND format = 'sysctl'", 13000},
		{"SELECT CAST(settings['nf_conntrack_tcp_timeout_time_wait'] AS BIGINT) FROM conntrack_limits WHERE nf_conntrack_tcp_timeout_time_wait = 120", 120},
		{"SELECT nf_conntrack_count FROM conntrack_limits WHERE format = 'conntrack-C' AND node = 'node-a'", 12990},
		{"SELECT nf_conntrack_max * 10000 + nf_conntrack_count FROM conntrack_limits WHERE node = 'node-b' AND format = 'sysctl' AND cardinality(settings) = 2", 1000*10000 + 900},
		{"SELECT count(*) FROM conntrack_limits", 6},
	} {
		var got int64
		if err := db.QueryRowContext(ctx, c.query).Scan(&got); err != nil {
			t.Errorf("%s: %v", c.query, err)
		} else if got != c.want {
			t.Errorf("%s = %d, want %d", c.query, got, c.want)
		}
	}
}
