package analyze

import (
	"context"
	"database/sql"
	"testing"

	"github.com/kubesift/kubesift/internal/testdb"
	"github.com/kubesift/kubesift/queries"
)

// TestObjectsInPieceShareTheRows checks ks_object_in_piece (queries/macros.sql): with the
// namespaces in order taking consecutive shares of the rows, every object is in exactly one
// piece, within the pieces its namespace's range meets, and every piece gets about its share of
// the rows however the namespaces fall on the pieces' bounds. 50 namespaces of 1,000 one-row
// objects over 41 pieces: when a namespace that met two pieces was split evenly between them, a
// piece could hold 1.6 shares.
func TestObjectsInPieceShareTheRows(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	const pieces = 41
	var objects, placed, rows, outside, minRows, maxRows int
	err := conn.QueryRowContext(ctx, `
		WITH objs AS (
			SELECT 'ns-' || lpad(CAST(i // 1000 AS VARCHAR), 2, '0') AS namespace, 'obj-' || i AS name
			FROM range(50000) r(i)
		),
		`+namespaceShares+`,
		placed AS (
			SELECT o.namespace, o.name, p.piece,
			       p.piece BETWEEN floor(ns.before * $1 / ns.total) AND ceil((ns.before + ns.n) * $1 / ns.total) - 1 AS inside
			FROM objs o JOIN ns USING (namespace), range($1) p(piece)
			WHERE ks_object_in_piece('', o.namespace, o.name, ns.before, ns.n, ns.total, $1, p.piece)
		),
		per_piece AS (
			SELECT p.piece, count(x.name) AS rows FROM range($1) p(piece) LEFT JOIN placed x USING (piece) GROUP BY p.piece
		)
		SELECT (SELECT count(*) FROM objs), (SELECT count(DISTINCT (namespace, name)) FROM placed), (SELECT count(*) FROM placed),
		       (SELECT count(*) FILTER (WHERE NOT inside) FROM placed), min(rows), max(rows)
		FROM per_piece`, pieces).Scan(&objects, &placed, &rows, &outside, &minRows, &maxRows)
	if err != nil {
		t.Fatal(err)
	}
	share := objects / pieces // 1,219
	if placed != objects || rows != objects {
		t.Errorf("%d of %d objects are in a piece, %d times in all", placed, objects, rows)
	}
	if outside != 0 {
		t.Errorf("%d objects in a piece their namespace's range does not meet", outside)
	}
	if minRows < share*8/10 || maxRows > share*12/10 {
		t.Errorf("rows per piece from %d to %d, want within 20%% of %d", minRows, maxRows, share)
	}
}

// TestPiecesNest checks that the piece macros nest: piece p of P pieces holds exactly the rows of
// pieces p*k .. p*k + k - 1 of P*k (analyze runs those when piece p runs out of memory), for
// ks_in_piece and for ks_object_in_piece, over 20,000 objects in namespaces of very unequal
// sizes, P of 3 and 41, k of 2 and 4.
func TestPiecesNest(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	var objects, checked, mismatched int
	err := conn.QueryRowContext(ctx, `
		WITH objs AS (
			SELECT 'ns-' || CAST(floor(sqrt(i)) AS BIGINT) % 37 AS namespace, 'obj-' || i AS name
			FROM range(20000) r(i)
		),
		`+namespaceShares+`,
		sizes AS (
			SELECT p AS pieces, k, m AS mult FROM (VALUES (3), (41)) a(p), (VALUES (2), (4)) b(k), (VALUES (1), (k)) c(m)
		),
		-- every object's piece among P and among P*k pieces, as each macro places it
		placed AS (
			SELECT s.pieces, s.k, s.mult, o.name,
			       list(p.piece) FILTER (WHERE ks_object_in_piece('', o.namespace, o.name, ns.before, ns.n, ns.total, s.pieces * s.mult, p.piece)) AS by_object,
			       list(p.piece) FILTER (WHERE ks_in_piece('', o.name, p.piece, s.pieces * s.mult)) AS by_namespace
			FROM objs o JOIN ns USING (namespace), sizes s, range(s.pieces * s.mult) p(piece)
			GROUP BY ALL
		),
		pairs AS (
			SELECT c.name, c.by_object AS coarse, f.by_object AS fine, c.by_namespace AS coarse_ns, f.by_namespace AS fine_ns, c.k
			FROM placed c JOIN placed f ON f.pieces = c.pieces AND f.k = c.k AND f.name = c.name AND c.mult = 1 AND f.mult = c.k
		)
		SELECT count(DISTINCT name), count(*),
		       count(*) FILTER (WHERE len(coarse) <> 1 OR len(fine) <> 1 OR fine[1] // k <> coarse[1]
		                           OR len(coarse_ns) <> 1 OR len(fine_ns) <> 1 OR fine_ns[1] // k <> coarse_ns[1])
		FROM pairs`).Scan(&objects, &checked, &mismatched)
	if err != nil {
		t.Fatal(err)
	}
	if objects != 20000 || checked != 20000*4 || mismatched != 0 {
		t.Errorf("%d of %d placements of %d objects do not nest", mismatched, checked, objects)
	}
}

// namespaceShares is the CTE ns over objs (namespace, name): each namespace's rows (n), the rows of
// the namespaces before it in order (before) and all rows (total), as the rule's ns_pieces has them.
const namespaceShares = `ns AS (
	SELECT namespace, count(*) AS n,
	       coalesce(sum(count(*)) OVER (ORDER BY namespace ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before,
	       CAST(sum(count(*)) OVER () AS BIGINT) AS total
	FROM objs GROUP BY namespace
)`

// macrosConn returns a connection to an empty in-memory database of kubesift's tables, with the
// queries' macros and times shown in UTC.
func macrosConn(t *testing.T) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := testdb.Empty(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, "SET TimeZone = 'UTC'; "+queries.Macros()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestPieceBucketsHoldTheirObjects checks ks_piece_buckets against ks_object_in_piece
// (queries/macros.sql): the place bucket of every object is among the buckets of its piece's
// share of its namespace, and a namespace spread over many pieces gives each piece a few of its
// 256 buckets (so that its scan skips the others' row groups), not all of them.
func TestPieceBucketsHoldTheirObjects(t *testing.T) {
	ctx := context.Background()
	conn := macrosConn(t)
	const pieces = 41
	for _, layout := range []struct {
		name, objects string
		maxBuckets    int // of a piece in one namespace
	}{
		{"50 namespaces of 1,000", `SELECT 'ns-' || lpad(CAST(i // 1000 AS VARCHAR), 2, '0') AS namespace, 'obj-' || i AS name FROM range(50000) r(i)`, 256},
		{"one namespace of 40,000 and three of 100", `SELECT CASE WHEN i < 40000 THEN 'big' ELSE 'small-' || (i % 3) END AS namespace, 'obj-' || i AS name FROM range(40300) r(i)`, 256/pieces + 4},
	} {
		var objects, missed, widest int
		err := conn.QueryRowContext(ctx, `
			WITH objs AS (`+layout.objects+`),
			`+namespaceShares+`,
			placed AS (
				SELECT o.namespace, o.name, p.piece,
				       list_contains(ks_piece_buckets(ns.before, ns.n, ns.total, $1, p.piece), ks_place_bucket('', o.namespace, o.name)) AS in_buckets
				FROM objs o JOIN ns USING (namespace), range($1) p(piece)
				WHERE ks_object_in_piece('', o.namespace, o.name, ns.before, ns.n, ns.total, $1, p.piece)
			),
			-- the buckets of a piece in a namespace that spans it and its neighbours on both sides
			inner_pieces AS (
				SELECT len(ks_piece_buckets(ns.before, ns.n, ns.total, $1, p.piece)) AS buckets
				FROM ns, range($1) p(piece)
				WHERE p.piece > floor(ns.before * $1 / ns.total) AND p.piece < ceil((ns.before + ns.n) * $1 / ns.total) - 1
			)
			SELECT (SELECT count(*) FROM placed), (SELECT count(*) FILTER (WHERE NOT in_buckets) FROM placed),
			       (SELECT coalesce(max(buckets), 0) FROM inner_pieces)`, pieces).Scan(&objects, &missed, &widest)
		if err != nil {
			t.Fatal(err)
		}
		if objects == 0 || missed != 0 {
			t.Errorf("%s: %d of %d objects are outside their piece's buckets", layout.name, missed, objects)
		}
		if widest > layout.maxBuckets {
			t.Errorf("%s: a piece inside a namespace covers %d buckets, want at most %d", layout.name, widest, layout.maxBuckets)
		}
	}
}
