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
	if _, err := runRule(ctx, db.Schema, conn, spill, r, Options{}, new(RuleProfile)); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_writes").Scan(&n); err == nil {
		t.Errorf("stage_writes outlives the rule (%d rows)", n)
	}
	broken := r
	broken.Stages = append([]rules.Stage{}, r.Stages...)
	broken.Stages = append(broken.Stages, rules.Stage{Table: "stage_broken", Query: "broken", SQL: "SELECT no_such_column FROM audit_events"})
	if _, err := runRule(ctx, db.Schema, conn, spill, broken, Options{}, new(RuleProfile)); err == nil || !strings.Contains(err.Error(), "stage stage_broken (stages/broken.sql)") {
		t.Errorf("a failing stage: %v", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM stage_writes").Scan(&n); err == nil {
		t.Errorf("stage_writes outlives a failing later stage (%d rows)", n)
	}
}
