package auditgen

import (
	"container/heap"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Options controls generation. The zero value is usable: every field has a
// default, documented on the field.
type Options struct {
	// Seed makes the output deterministic: same Seed and Options, same bytes.
	Seed int64
	// Start is the time of the first event (default 2026-11-21T05:31:08Z).
	Start time.Time
	// TargetBytes bounds the output size. Generation stops before the first
	// line that would exceed it, so the output is whole lines and at most
	// TargetBytes long. Default 64 MiB when MaxEvents is also zero.
	TargetBytes int64
	// MaxEvents, if > 0, stops after that many events (lines).
	MaxEvents int64
	// EventsPerSecond is the mean request rate (default 250). Timestamps
	// advance by exponential inter-arrival gaps.
	EventsPerSecond float64
	// Namespaces is the number of application namespaces (default 16).
	Namespaces int
	// Nodes is the number of nodes, each with a kubelet (default 24).
	Nodes int
	// RequestReceivedFraction is the share of requests that also log a
	// RequestReceived stage event (default 0.05; negative disables).
	RequestReceivedFraction float64
	// LargeBodyFraction is the share of requests carrying a body of a few
	// hundred KB (cluster-wide pod lists, big ConfigMaps) (default 0.01;
	// negative disables).
	LargeBodyFraction float64
}

func (o Options) withDefaults() Options {
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 11, 21, 5, 31, 8, 312540000, time.UTC)
	}
	o.Start = o.Start.UTC()
	if o.TargetBytes <= 0 {
		o.TargetBytes = math.MaxInt64
		if o.MaxEvents <= 0 {
			o.TargetBytes = 64 << 20
		}
	}
	if o.EventsPerSecond <= 0 {
		o.EventsPerSecond = 250
	}
	if o.Namespaces <= 0 {
		o.Namespaces = 16
	}
	if o.Nodes <= 0 {
		o.Nodes = 24
	}
	if o.RequestReceivedFraction == 0 {
		o.RequestReceivedFraction = 0.05
	}
	if o.LargeBodyFraction == 0 {
		o.LargeBodyFraction = 0.01
	}
	return o
}

// Stats describes what Generate wrote.
type Stats struct {
	Events int64 // lines written
	Bytes  int64 // bytes written, including newlines

	RequestReceived  int64 // events by stage
	ResponseStarted  int64
	ResponseComplete int64

	Metadata        int64 // events by level
	RequestResponse int64

	LargeBodies  int64 // events with a large body
	MaxLineBytes int   // longest line, including its newline

	FirstTimestamp      time.Time // stageTimestamp of the first and last events
	LastTimestamp       time.Time
	LastResourceVersion int64 // highest resourceVersion handed out
}

var errStop = errors.New("auditgen: target reached")

const flushSize = 1 << 20

// request is the event under construction; scenarios fill the byte slices.
type request struct {
	level     string
	verb      string
	actor     *actor
	uri       []byte
	ref       []byte // objectRef JSON or empty
	status    []byte // responseStatus JSON
	req, resp []byte // bodies or empty
	ann       int
	id        []byte
	recv      int64 // µs
	done      int64
	large     bool
}

type pendingWatch struct {
	due   int64
	seq   uint64
	level string
	actor *actor
	id    []byte
	uri   []byte
	ref   []byte
	recv  int64
	ann   int
}

type watchHeap []*pendingWatch

func (h watchHeap) Len() int { return len(h) }
func (h watchHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].seq < h[j].seq
}
func (h watchHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *watchHeap) Push(x any)   { *h = append(*h, x.(*pendingWatch)) }
func (h *watchHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type gen struct {
	opt     Options
	r       *rand.Rand
	w       *world
	out     io.Writer
	buf     []byte
	st      Stats
	err     error
	clock   int64 // µs of the last emitted stageTimestamp
	gapUS   float64
	rv      int64
	idKey   uint64
	idN     uint64
	seq     uint64
	tc      tsCache
	watches watchHeap

	cur request
	ctx renderCtx
	tsb [32]byte
	tmb [32]byte
}

// Generate writes audit events as NDJSON to w until opt.TargetBytes or
// opt.MaxEvents is reached, and reports what it wrote.
//
// As in the apiserver, a request's stages (RequestReceived, ResponseStarted,
// ResponseComplete) share its auditID, and no two requests share one: the
// pair (auditID, stage) is unique. Lines are in stageTimestamp order (never
// decreasing); a watch's ResponseComplete carries its original, minutes
// older requestReceivedTimestamp. resourceVersions handed out by writes
// strictly increase. Watches still open when output stops never complete.
func Generate(w io.Writer, opt Options) (Stats, error) {
	opt = opt.withDefaults()
	g := &gen{opt: opt, out: w}
	g.r = rand.New(rand.NewPCG(uint64(opt.Seed), 0x6b756265736966))
	g.idKey = mix64(uint64(opt.Seed) ^ 0xa0761d6478bd642f)
	g.rv = 4_000_000 + g.r.Int64N(1_000_000)
	g.w = buildWorld(g.r, &opt, g.rv)
	g.clock = opt.Start.UnixMicro()
	g.gapUS = 1e6 / opt.EventsPerSecond
	g.buf = make([]byte, 0, flushSize+flushSize/4)
	for g.err == nil {
		g.step()
	}
	if g.err == errStop {
		g.err = nil
	}
	if g.err == nil && len(g.buf) > 0 {
		_, g.err = w.Write(g.buf)
	}
	g.st.LastResourceVersion = g.rv
	return g.st, g.err
}

func (g *gen) nextRV() int64 { g.rv += 1 + int64(g.r.IntN(3)); return g.rv }

// begin starts a request: allocates its auditID and times, and prepares the
// render context (timestamps for bodies).
func (g *gen) begin(level, verb string, a *actor, latencyUS int64) *request {
	c := &g.cur
	c.level, c.verb, c.actor = level, verb, a
	c.uri, c.ref, c.status, c.req, c.resp = c.uri[:0], c.ref[:0], c.status[:0], c.req[:0], c.resp[:0]
	c.ann, c.large = 0, false
	g.idN++
	c.id = appendUUID(c.id[:0], g.idKey, g.idN)
	gap := int64(g.r.ExpFloat64() * g.gapUS)
	c.done = g.clock + gap
	c.recv = c.done - latencyUS
	g.ctx.ts = g.tc.appendSec(g.tsb[:0], c.recv)
	g.ctx.tm = g.tc.appendMicro(g.tmb[:0], c.recv)
	g.ctx.holder, g.ctx.trans = "", 0
	return c
}

// latency returns a request latency in µs with a long tail around base.
func (g *gen) latency(base int64) int64 {
	return base/4 + int64(g.r.ExpFloat64()*float64(base))
}

// finish emits the request: optionally its RequestReceived event, then the
// final-stage event; watches go on the pending list instead.
func (g *gen) finish(c *request, watch bool, timeoutS int64) {
	if g.err != nil {
		return
	}
	if g.r.Float64() < g.opt.RequestReceivedFraction {
		if c.recv < g.clock {
			c.recv = g.clock
		}
		g.flushWatches(c.recv)
		g.emit(c.level, auditv1.StageRequestReceived, c.id, c.uri, c.verb, c.actor, c.ref, nil, nil, nil, c.recv, c.recv, -1, false)
	}
	g.flushWatches(c.done)
	if c.recv > c.done {
		c.recv = c.done
	}
	if watch {
		started := c.recv + int64(60+g.r.IntN(400))
		if started > c.done {
			c.done = started
		}
		g.emit(c.level, auditv1.StageResponseStarted, c.id, c.uri, c.verb, c.actor, c.ref, c.status, nil, nil, c.recv, c.done, c.ann, false)
		g.seq++
		pw := &pendingWatch{due: c.recv + timeoutS*1e6 + int64(g.r.IntN(3000)), seq: g.seq, level: c.level, actor: c.actor,
			id: append([]byte(nil), c.id...), uri: append([]byte(nil), c.uri...), ref: append([]byte(nil), c.ref...), recv: c.recv, ann: c.ann}
		heap.Push(&g.watches, pw)
		return
	}
	g.emit(c.level, auditv1.StageResponseComplete, c.id, c.uri, c.verb, c.actor, c.ref, c.status, c.req, c.resp, c.recv, c.done, c.ann, c.large)
}

var statusOK = []byte(`{"metadata":{},"code":200}`)

func (g *gen) flushWatches(until int64) {
	for g.err == nil && len(g.watches) > 0 && g.watches[0].due <= until {
		pw := heap.Pop(&g.watches).(*pendingWatch)
		due := pw.due
		if due < g.clock {
			due = g.clock
		}
		g.emit(pw.level, auditv1.StageResponseComplete, pw.id, pw.uri, "watch", pw.actor, pw.ref, statusOK, nil, nil, pw.recv, due, pw.ann, false)
	}
}

// emit appends one event line to the buffer; ann < 0 omits annotations.
func (g *gen) emit(level string, stage auditv1.Stage, id, uri []byte, verb string, a *actor, ref, status, req, resp []byte, recv, done int64, ann int, large bool) {
	if g.err != nil {
		return
	}
	if g.opt.MaxEvents > 0 && g.st.Events >= g.opt.MaxEvents {
		g.err = errStop
		return
	}
	start := len(g.buf)
	b := g.buf
	b = append(b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"`...)
	b = append(b, level...)
	b = append(b, `","auditID":"`...)
	b = append(b, id...)
	b = append(b, `","stage":"`...)
	b = append(b, stage...)
	b = append(b, `","requestURI":"`...)
	b = append(b, uri...)
	b = append(b, `","verb":"`...)
	b = append(b, verb...)
	b = append(b, `",`...)
	b = append(b, a.hdr...)
	if len(ref) > 0 {
		b = append(b, `,"objectRef":`...)
		b = append(b, ref...)
	}
	if len(status) > 0 {
		b = append(b, `,"responseStatus":`...)
		b = append(b, status...)
	}
	if len(req) > 0 {
		b = append(b, `,"requestObject":`...)
		b = append(b, req...)
	}
	if len(resp) > 0 {
		b = append(b, `,"responseObject":`...)
		b = append(b, resp...)
	}
	b = append(b, `,"requestReceivedTimestamp":"`...)
	b = g.tc.appendMicro(b, recv)
	b = append(b, `","stageTimestamp":"`...)
	b = g.tc.appendMicro(b, done)
	b = append(b, '"')
	if ann >= 0 {
		b = append(b, `,"annotations":`...)
		b = append(b, a.ann[ann]...)
	}
	b = append(b, "}\n"...)
	n := len(b) - start
	if g.st.Bytes+int64(n) > g.opt.TargetBytes {
		g.buf = b[:start]
		g.err = errStop
		return
	}
	g.buf = b
	if done > g.clock {
		g.clock = done
	}
	st := &g.st
	if st.Events == 0 {
		st.FirstTimestamp = time.UnixMicro(done).UTC()
	}
	st.LastTimestamp = time.UnixMicro(done).UTC()
	st.Events++
	st.Bytes += int64(n)
	if n > st.MaxLineBytes {
		st.MaxLineBytes = n
	}
	switch stage {
	case auditv1.StageRequestReceived:
		st.RequestReceived++
	case auditv1.StageResponseStarted:
		st.ResponseStarted++
	default:
		st.ResponseComplete++
	}
	if level == lvlRR {
		st.RequestResponse++
	} else {
		st.Metadata++
	}
	if large {
		st.LargeBodies++
	}
	if len(g.buf) >= flushSize {
		if _, err := g.out.Write(g.buf); err != nil {
			g.err = err
		}
		g.buf = g.buf[:0]
	}
}

const (
	lvlMeta = string(auditv1.LevelMetadata)
	lvlRR   = string(auditv1.LevelRequestResponse)
)
