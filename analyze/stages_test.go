package analyze

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/rules"
	"github.com/kubesift/kubesift/store"
)

// TestStages runs the user rule of analyze/testdata/stages over all the recordings: its stage is
// selected once for all its pieces (each piece sees the same random numbers), the pieces follow
// the stage's rows (not the audit events'), every staged row is in exactly one piece, and the
// stage is gone once the rule has run; a stage that fails names itself and leaves nothing behind.
func TestStages(t *testing.T) {
	ctx := context.Background()
	db, r := stagedWritesRule(t)
	var writes int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE verb IN ('create', 'update', 'patch')").Scan(&writes); err != nil {
		t.Fatal(err)
	}
	events, _ := db.Schema.RowCount(ctx, db, "audit_events")
	want := r.Pieces.Count(writes, 1)
	if want < 3 || want == r.Pieces.Count(events, 1) {
		t.Fatalf("%d writes make %d pieces, %d events %d: the fixture cannot tell them apart", writes, want, events, r.Pieces.Count(events, 1))
	}
	rep, err := Run(ctx, db, []rules.Rule{r}, Options{})
	if err != nil || rep.Outcomes[0].Err != nil {
		t.Fatalf("%v %v", err, rep.Outcomes[0].Err)
	}
	if int64(len(rep.findings)) != want {
		t.Fatalf("%d findings, want one per piece of %d writes: %d", len(rep.findings), writes, want)
	}
	var inPieces int64
	var drawn string
	for i, f := range rep.findings {
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
	db, r := stagedWritesRule(t)
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
	drop, err := stage(ctx, conn, r, Args(r, Options{}), unsorted)
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
	for _, f := range rep.findings {
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
	drop, err := stage(ctx, conn, r, Args(r, Options{}), unsorted)
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

// stagedWritesRule returns a database of all the recordings and the user rule of
// analyze/testdata/stages, which runs in pieces of its one stage.
func stagedWritesRule(t *testing.T) (*store.DB, rules.Rule) {
	t.Helper()
	db := scenarioDB(t, "samples", ingest.Options{ClusterPerDir: true})
	rs, err := rules.LoadDir("analyze/testdata/stages")
	if err != nil {
		t.Fatal(err)
	}
	return db, rs[0]
}

// unsorted is stage's answer for a rule that runs in one piece: no stage sorted for pieces.
func unsorted(int, bool) (sort, decided bool, err error) { return false, true, nil }

// TestStagesSortedForPieces: a stage with sort_for_pieces is made sorted by its columns when the
// rule runs in more than one piece (told once the stage is made, from its rows) or when that
// cannot be told yet (the pieces follow a later stage), and as its query makes it in one piece; a
// column the stage lacks fails the stage at once.
func TestStagesSortedForPieces(t *testing.T) {
	ctx := context.Background()
	db, r := stagedWritesRule(t)
	r.Stages = []rules.Stage{{Table: "stage_writes", Query: "staged-writes", SortForPieces: []string{"verb", "ts"},
		SQL: "SELECT verb, stage_at AS ts, audit_id FROM audit_events WHERE verb IN ('create', 'update', 'patch') AND stage_at <= ks_window_end($until)\nORDER BY audit_id -- not by verb"}}
	// one finding per piece, whose count is how many of the stage's rows are out of the order of
	// (verb, ts), in the order the stage holds them
	r.SQL = `SELECT 'staged-writes' AS rule, 'info' AS severity, '' AS cluster, NULL::VARCHAR AS namespace, NULL::VARCHAR AS name,
		format('piece {} of {}', $piece + 1, $pieces) AS subject,
		TIMESTAMPTZ '2026-01-01 00:00:00Z' AS first_seen, TIMESTAMPTZ '2026-01-01 00:00:00Z' AS last_seen,
		count(*) FILTER (WHERE back) AS count, struct_pack(staged := count(*), drawn := 0) AS facts, '[]' AS evidence
		FROM (SELECT (verb, ts) < lag((verb, ts)) OVER (ORDER BY rowid) AS back FROM kubesift_stages.main.stage_writes)`
	var writes int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM audit_events WHERE verb IN ('create', 'update', 'patch')").Scan(&writes); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                 string
		rowsPerPiece, pieces int64 // the rule's pieces.rows; analyze's Pieces (0: counted)
		later                bool  // the pieces follow a stage made after stage_writes
		wantPieces           int64
		sorted               bool
	}{
		{"counted, one piece", writes, 0, false, 1, false},
		{"counted, two pieces", (writes + 1) / 2, 0, false, 2, true},
		{"one piece asked for", 10, 1, false, 1, false},
		{"two pieces asked for", writes, 2, false, 2, true},
		{"the pieces of a later stage, not counted yet", writes, 0, true, 1, true},
	} {
		rule := r
		rule.Pieces = &rules.Pieces{Table: "stage_writes", Rows: tc.rowsPerPiece}
		if tc.later {
			rule.Stages = append(slices.Clip(r.Stages), rules.Stage{Table: "stage_later", Query: "later", SQL: "SELECT * FROM stage_writes"})
			rule.Pieces.Table = "stage_later"
		}
		rep, err := Run(ctx, db, []rules.Rule{rule}, Options{Pieces: tc.pieces})
		if err != nil || rep.Outcomes[0].Err != nil {
			t.Fatalf("%s: %v %v", tc.name, err, rep.Outcomes[0].Err)
		}
		var piece, pieces, back, staged int64
		var drawn string
		if _, err := fmt.Sscanf(rep.findings[0].Summary, "piece %d of %d: %d of %d writes, drawn %s", &piece, &pieces, &back, &staged, &drawn); err != nil {
			t.Fatalf("%s: summary %q: %v", tc.name, rep.findings[0].Summary, err)
		}
		if staged != writes || (back == 0) != tc.sorted || pieces != tc.wantPieces {
			t.Errorf("%s: in %d pieces %d of %d rows out of order; want them sorted: %v", tc.name, pieces, back, staged, tc.sorted)
		}
	}

	conn, err := openSandbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lacking := r
	lacking.Stages = []rules.Stage{{Table: "stage_writes", Query: "staged-writes", SortForPieces: []string{"verb", "place_bucket"}, SQL: r.Stages[0].SQL}}
	if _, err := stage(ctx, conn, lacking, Args(r, Options{}), unsorted); err == nil ||
		!strings.Contains(err.Error(), `stage stage_writes (stages/staged-writes.sql): sort_for_pieces: the stage has no column "place_bucket" (it has verb, ts, audit_id)`) {
		t.Errorf("a sort column the stage lacks: %v", err)
	}
}
