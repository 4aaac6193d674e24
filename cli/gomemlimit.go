package cli

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/kubesift/kubesift/ingest"
	"github.com/kubesift/kubesift/store"
)

// GoMemoryLimit is the soft limit of the Go heap that SetGoMemoryLimit sets when $GOMEMLIMIT is
// unset: most of kubesift's memory is DuckDB's (--memory-limit), and the Go heap's garbage should
// not add to it.
const GoMemoryLimit = 256 << 20

// SetGoMemoryLimit sets the Go heap's soft limit to GoMemoryLimit, unless $GOMEMLIMIT sets one:
// main calls it first, and so does kubesift-bench, whose measured loads run as kubesift does.
func SetGoMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(GoMemoryLimit)
	}
}

// loadingGoMemoryLimit is the Go heap's soft limit while files load, when $GOMEMLIMIT is unset.
// The load's live Go heap is 110-135 MiB (its pipeline holds a few batches at a time); under
// GoMemoryLimit its garbage added to the peak RSS: a 4 GB load of the samples mix peaked at
// 1,436-1,494 MiB under GoMemoryLimit against 1,181-1,210 MiB under this one, in the same time,
// and 10 GB of it gzipped at 1,402-1,470 MiB against 1,329-1,349 MiB, where the load takes 3-11%
// longer under this one (BENCHMARKS.md): the margin under 1.5 GiB is worth that.
const loadingGoMemoryLimit = 160 << 20

// ingestFiles loads inputs into db with the Go heap held to loadingGoMemoryLimit (unless
// $GOMEMLIMIT or a lower limit says otherwise), and gives the limit back after.
func (e *env) ingestFiles(ctx context.Context, db *store.DB, opt ingest.Options, inputs []ingest.Input) ([]ingest.FileResult, error) {
	if e.getenv("GOMEMLIMIT") == "" {
		if limit := debug.SetMemoryLimit(-1); limit > loadingGoMemoryLimit {
			debug.SetMemoryLimit(loadingGoMemoryLimit)
			defer debug.SetMemoryLimit(limit)
		}
	}
	return ingest.New(db, opt).Ingest(ctx, inputs)
}
