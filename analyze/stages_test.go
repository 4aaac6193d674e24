package analyze

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
)

// TestStages runs the user rule of analyze/testdata/stages over all the recordings: its stage is
// selected once for all its pieces (each piece sees the same random numbers), the pieces follow
// the stage's rows (not the audit events'), every staged row is in exactly one piece, and the
// stage is gone once the rule has run; a stage that fails names itself and leaves nothing behind.
func TestStages(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	rs, err := rules.LoadDir("analyze/testdata/stages")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	var writes int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE verb IN ('create', 'update', 'patch')").Scan(&writes); err != nil {
		t.Fatal(err)
	}
	events, _ := db.Schema.RowCount(ctx, db, "audit_events")
	want := r.Pieces.Count(writes, 1)
	if want < 3 || want == r.Pieces.Count(events, 1) {
		t.Fatalf("%d writes make %d pieces, %d events %d: the fixture cannot tell them apart", writes, want, events, r.Pieces.Count(events, 1))
	}
	rep, err := Run(ctx, db, rs, Options{})
	if err != nil || rep.Outcomes[0].Err != nil {
		t.Fatalf("%v %v", err, rep.Outcomes[0].Err)
	}
	if int64(len(rep.Findings)) != want {
		t.Fatalf("%d findings, want one per piece of %d writes: %d", len(rep.Findings), writes, want)
	}
	var inPieces int64
	var drawn string
	for i, f := range rep.Findings {
		var piece, pieces, n, staged int64
		var sum string
		if _, err := fmt.Sscanf(f.Summary, "piece %d of %d: %d of %d writes, drawn %s", &piece, &pieces, &n, &staged, &sum); err != nil {
			t.Fatalf("summary %q: %v", f.Summary, err)
		}
		if staged != writes || pieces != want {
			t.Errorf("%q: want %d staged writes in %d pieces", f.Summary, writes, want)
		}
		if i > 0 && sum != drawn {
			t.Errorf("piece %d drew %s, piece 1 %s: the stage ran again", piece, sum, drawn)
		}
		drawn = sum
		inPieces += n
	}
	if inPieces != writes {
		t.Errorf("the pieces hold %d writes, the stage %d", inPieces, writes)
	}

	conn, err := openSandbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	spill := &evidenceSpill{}
	defer spill.Close()
	if _, err := runRule(ctx, db.Schema, conn, spill, r, Options{memoryShare: db.MemoryShare()}, new(RuleProfile)); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_writes").Scan(&n); err == nil {
		t.Errorf("stage_writes outlives the rule (%d rows)", n)
	}
	broken := r
	broken.Stages = append([]rules.Stage{}, r.Stages...)
	broken.Stages = append(broken.Stages, rules.Stage{Table: "stage_broken", Query: "broken", SQL: "SELECT no_such_column FROM audit_events"})
	if _, err := runRule(ctx, db.Schema, conn, spill, broken, Options{memoryShare: db.MemoryShare()}, new(RuleProfile)); err == nil || !strings.Contains(err.Error(), "stage stage_broken (stages/broken.sql)") {
		t.Errorf("a failing stage: %v", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_writes").Scan(&n); err == nil {
		t.Errorf("stage_writes outlives a failing later stage (%d rows)", n)
	}
}

// TestTransientStage: a transient stage feeds the stages after it and is gone once they are all
// made and compressed, before any piece runs; the other stages stay until the rule drops them.
func TestTransientStage(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	rs, err := rules.LoadDir("analyze/testdata/stages")
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	r.Stages = []rules.Stage{
		{Table: "stage_all_writes", Query: "all-writes", SQL: "SELECT verb FROM audit_events WHERE verb IN ('create', 'update', 'patch')", Transient: true},
		{Table: "stage_writes", Query: "staged-writes", SQL: "SELECT * FROM stage_all_writes WHERE verb = 'create'"},
	}
	var creates int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE verb = 'create'").Scan(&creates); err != nil || creates == 0 {
		t.Fatalf("%d creates in the samples: %v", creates, err)
	}
	conn, err := openSandbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	drop, err := stage(ctx, conn, r, Args(r, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := settleStages(ctx, conn, r, 2); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_all_writes").Scan(&n); err == nil {
		t.Errorf("the transient stage_all_writes outlives the stages (%d rows)", n)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_writes").Scan(&n); err != nil || n != creates {
		t.Errorf("stage_writes: %d rows (%v), want the %d creates", n, err, creates)
	}
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_writes").Scan(&n); err == nil {
		t.Errorf("stage_writes outlives drop (%d rows)", n)
	}
}

// TestLockCandidates: election-lock-churn's pieces follow only the writes of the objects it can
// report (stage_lock_writes): over all the recordings, every object staged for the pieces has a
// finding or snapshots, and objects written in the recordings are left out (Leases renewed by one
// holder, slow ConfigMaps).
func TestLockCandidates(t *testing.T) {
	ctx := context.Background()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	r := builtinRule(t, "election-lock-churn")
	rep, err := Run(ctx, db, []rules.Rule{r}, Options{})
	if err != nil || rep.Outcomes[0].Err != nil {
		t.Fatalf("%v %v", err, rep.Outcomes[0].Err)
	}
	reported := map[string]bool{}
	for _, f := range rep.Findings {
		reported[f.Cluster+"/"+f.Namespace+"/"+f.Name] = true
	}
	if len(reported) == 0 {
		t.Fatal("no finding in the recordings: the fixture cannot tell candidates apart")
	}
	conn, err := openSandbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	drop, err := stage(ctx, conn, r, Args(r, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	}()
	rows, err := conn.QueryContext(ctx, `SELECT DISTINCT s.cluster, coalesce(s.namespace, ''), coalesce(s.name, ''),
	                                            EXISTS (SELECT 1 FROM leader_locks l WHERE l.source = 'snapshot' AND coalesce(l.cluster, '') = s.cluster
	                                                    AND l.namespace = s.namespace AND l.name = s.name)
	                                     FROM stage_lock_writes s`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	staged := 0
	for rows.Next() {
		var cluster, namespace, name string
		var snapshots bool
		if err := rows.Scan(&cluster, &namespace, &name, &snapshots); err != nil {
			t.Fatal(err)
		}
		staged++
		if !reported[cluster+"/"+namespace+"/"+name] && !snapshots {
			t.Errorf("%s/%s/%s is staged for the pieces without a finding or snapshots", cluster, namespace, name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var written int64
	if err := db.QueryRowContext(ctx, `SELECT count(DISTINCT (coalesce(cluster, ''), resource, namespace, name)) FROM audit_events
	                                   WHERE resource IN ('endpoints', 'configmaps', 'leases') AND verb IN ('update', 'patch')
	                                     AND coalesce(namespace, '') <> 'kube-node-lease'`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	if int64(staged) >= written {
		t.Errorf("%d objects staged for the pieces of %d written: none left out", staged, written)
	}
}
