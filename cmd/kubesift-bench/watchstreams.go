package main

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// The watch-streams mix (--mix watchstreams): many long-lived clients, each re-watching one
// collection for a long time, so that every client is one watch stream of --chain-length watches
// (the input watch-rewind's cost grows with). Shaped like the real recordings in samples/: every
// watch is logged at ResponseStarted when it starts and ResponseComplete when it ends, its
// requestURI carries allowWatchBookmarks, resourceVersion, timeout and timeoutSeconds, each client
// starts with a list of resourceVersion 0, and the next watch starts a few milliseconds after the
// previous one ended. The timeouts are short (5-60 s, as the lab's clients in samples/ use 4-12 s)
// so that long chains span days, not years.
//
// resourceVersions follow the clock: the server's version at time t is watchRVBase plus the
// milliseconds since the start, and a write gets the version of its time. Clients come in four
// kinds, by their index modulo 4:
//   - 0, a kube-proxy-like client (system:kube-proxy from its node's address) watching
//     endpointslices in all namespaces with kube-proxy's label selector, resuming from the newest
//     version (a bookmark just before its watch ended): healthy;
//   - 1, an operator watching services in its own namespace, resuming from the newest version:
//     healthy, although a write lands in its namespace every writeInterval;
//   - 2, the same but every rewindEvery-th watch resumes from the version of its first watch (a
//     saved checkpoint): it goes backwards, chainLength/rewindEvery times;
//   - 3, the same but every rewindEvery-th watch after which a write landed in its namespace
//     while the previous watch was open repeats the previous version (it missed the event).
//
// Writes are updates of Services in each operator's namespace (RequestResponse, with the
// resourceVersion in the response body), one every writeInterval.

const (
	watchStreamKinds   = 4
	rewindEvery        = 100
	writeInterval      = 60 * time.Second
	watchRVBase        = 1_000_000
	watchTimeoutMinSec = 5
	watchTimeoutMaxSec = 60
)

// watchStreamsStart is the time the generated log starts at.
var watchStreamsStart = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// watchStreamsClients is how many clients of chainLength watches make about size bytes (each
// watch is two events of about 920 bytes, and the operators' writes add the rest of about 2,200
// bytes a watch), and at least one client of each kind.
func watchStreamsClients(size int64, chainLength int) int {
	const bytesPerWatch = 2200
	n := size / (int64(chainLength) * bytesPerWatch)
	return int(max(n, watchStreamKinds))
}

// watchClient is one client's list/watch loop.
type watchClient struct {
	index, kind int
	namespace   string
	next        int     // the next watch (0 = the list before the first watch)
	recv, ended int64   // this watch's start and end, µs since watchStreamsStart
	rv          int64   // the version this watch asks for
	firstRV     int64   // the version of the first watch (the rewinding client's checkpoint)
	pending     []event // the events of the current request not yet written
}

type event struct {
	at   int64 // µs since watchStreamsStart
	line []byte
}

// serverRV is the server's resourceVersion at t (µs since the start).
func serverRV(t int64) int64 { return watchRVBase + t/1000 }

// streamGen merges the clients' and the writer's events in time order.
type streamGen struct {
	r           *rand.Rand
	chainLength int
	clients     []*watchClient
	queue       eventQueue
	nextWrite   []int64 // per operator namespace (client index), µs
	written     int64
	events      int64
}

type queued struct {
	at     int64
	client int // -1 for a write
	ns     int // the writer's namespace (client index)
	line   []byte
}

type eventQueue []queued

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].client < q[j].client
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *eventQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// writeWatchStreams writes the watch-streams mix: clients streams of chainLength watches each.
func writeWatchStreams(w io.Writer, clients, chainLength int) (events, bytes int64, err error) {
	g := &streamGen{r: rand.New(rand.NewPCG(12, uint64(chainLength))), chainLength: chainLength}
	g.nextWrite = make([]int64, clients)
	for i := range clients {
		c := &watchClient{index: i, kind: i % watchStreamKinds, namespace: fmt.Sprintf("team-%d", i)}
		// clients start within the first minute
		c.ended = int64(g.r.IntN(60_000_000))
		g.clients = append(g.clients, c)
		g.advance(c)
		if c.kind != 0 {
			g.nextWrite[i] = int64(g.r.IntN(int(writeInterval / time.Microsecond)))
			heap.Push(&g.queue, queued{at: g.nextWrite[i], client: -1, ns: i})
		}
	}
	for g.queue.Len() > 0 {
		q := heap.Pop(&g.queue).(queued)
		if q.client < 0 {
			if q.at > g.clients[q.ns].ended {
				continue // its client has stopped
			}
			line := g.writeLine(q.ns, q.at)
			if err := g.emit(w, line); err != nil {
				return g.events, g.written, err
			}
			heap.Push(&g.queue, queued{at: q.at + int64(writeInterval/time.Microsecond), client: -1, ns: q.ns})
			continue
		}
		if err := g.emit(w, q.line); err != nil {
			return g.events, g.written, err
		}
		c := g.clients[q.client]
		if len(c.pending) == 0 {
			g.advance(c)
		} else {
			g.push(c)
		}
	}
	return g.events, g.written, nil
}

func (g *streamGen) emit(w io.Writer, line []byte) error {
	n, err := w.Write(line)
	g.written += int64(n)
	g.events++
	return err
}

// push queues the client's next pending event.
func (g *streamGen) push(c *watchClient) {
	e := c.pending[0]
	c.pending = c.pending[1:]
	heap.Push(&g.queue, queued{at: e.at, client: c.index, line: e.line})
}

// advance starts the client's next request (the list, then watch after watch) after the previous
// one ended, and queues its first event; after chainLength watches the client stops.
func (g *streamGen) advance(c *watchClient) {
	if c.next > g.chainLength {
		return
	}
	start := c.ended + 1000 + int64(g.r.IntN(20_000)) // 1-21 ms later
	if c.next == 0 {
		c.recv, c.ended = start, start+2000+int64(g.r.IntN(8000))
		c.rv = serverRV(c.recv)
		c.pending = []event{{c.ended, g.listLine(c)}}
	} else {
		timeout := watchTimeoutMinSec + g.r.IntN(watchTimeoutMaxSec-watchTimeoutMinSec)
		prevRecv, prevEnded, prevRV := c.recv, c.ended, c.rv
		c.recv, c.ended = start, start+int64(timeout)*1_000_000+int64(g.r.IntN(3000))
		// a healthy client resumes from the newest version it was sent: a bookmark shortly before
		// its previous watch ended (or the list's version for the first watch)
		c.rv = serverRV(prevEnded - 100_000)
		if c.next == 1 {
			c.rv = prevRV
			c.firstRV = c.rv
		}
		if c.next > 1 && c.next%rewindEvery == 0 {
			switch c.kind {
			case 2:
				c.rv = c.firstRV
			case 3:
				if g.wroteDuring(c.index, prevRecv, prevEnded-1_000_000) {
					c.rv = prevRV
				}
			}
		}
		c.pending = []event{{c.recv, g.watchLine(c, "ResponseStarted", timeout)}, {c.ended, g.watchLine(c, "ResponseComplete", timeout)}}
	}
	c.next++
	g.push(c)
}

// wroteDuring says whether the writer of namespace ns wrote between from and to.
func (g *streamGen) wroteDuring(ns int, from, to int64) bool {
	if to <= from {
		return false
	}
	step := int64(writeInterval / time.Microsecond)
	next := g.nextWrite[ns] // the first write's time; writes follow every step
	if next > to {
		return false
	}
	k := max(0, (from-next+step-1)/step)
	return next+k*step <= to
}

func (g *streamGen) clientIdentity(c *watchClient) (user, agent, ip string) {
	ip = fmt.Sprintf("10.%d.%d.%d", 20+c.index/65536, (c.index/256)%256, c.index%256)
	if c.kind == 0 {
		return "system:kube-proxy", "kube-proxy/v1.33.13 (linux/amd64) kubernetes/$Format", ip
	}
	return "system:serviceaccount:" + c.namespace + ":svc-operator", "svc-operator/v0.3.1 (linux/amd64) client-go/v0.23.16", ip
}

func auditID(client, n int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8000-%012x", client, (n>>24)&0xffff, (n>>12)&0xfff, n&0xfff)
}

func stamp(t int64) string {
	return watchStreamsStart.Add(time.Duration(t) * time.Microsecond).Format("2006-01-02T15:04:05.000000Z")
}

func (g *streamGen) collection(c *watchClient) (uriPath, objectRef, selector string) {
	if c.kind == 0 {
		return "/apis/discovery.k8s.io/v1/endpointslices",
			`{"resource":"endpointslices","apiGroup":"discovery.k8s.io","apiVersion":"v1"}`,
			"labelSelector=%21service.kubernetes.io%2Fheadless%2C%21service.kubernetes.io%2Fservice-proxy-name\\u0026"
	}
	return "/api/v1/namespaces/" + c.namespace + "/services",
		`{"resource":"services","namespace":"` + c.namespace + `","apiVersion":"v1"}`, ""
}

func (g *streamGen) watchLine(c *watchClient, stage string, timeout int) []byte {
	user, agent, ip := g.clientIdentity(c)
	path, ref, selector := g.collection(c)
	uri := path + "?allowWatchBookmarks=true\\u0026" + selector + "resourceVersion=" + strconv.FormatInt(c.rv, 10) +
		"\\u0026timeout=" + strconv.Itoa(timeout) + "s\\u0026timeoutSeconds=" + strconv.Itoa(timeout) + "\\u0026watch=true"
	at := c.recv
	if stage == "ResponseComplete" {
		at = c.ended
	}
	return fmt.Appendf(nil, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%s","stage":"%s","requestURI":"%s","verb":"watch","user":{"username":"%s","groups":["system:authenticated"]},"sourceIPs":["%s"],"userAgent":"%s","objectRef":%s,"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"svc-watchers\" of ClusterRole \"svc-watcher\""}}`+"\n",
		auditID(c.index, c.next), stage, uri, user, ip, agent, ref, stamp(c.recv), stamp(at))
}

func (g *streamGen) listLine(c *watchClient) []byte {
	user, agent, ip := g.clientIdentity(c)
	path, ref, selector := g.collection(c)
	uri := path + "?" + selector + "limit=500\\u0026resourceVersion=0"
	return fmt.Appendf(nil, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%s","stage":"ResponseComplete","requestURI":"%s","verb":"list","user":{"username":"%s","groups":["system:authenticated"]},"sourceIPs":["%s"],"userAgent":"%s","objectRef":%s,"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"svc-watchers\" of ClusterRole \"svc-watcher\""}}`+"\n",
		auditID(c.index, 0), uri, user, ip, agent, ref, stamp(c.recv), stamp(c.ended))
}

// writeLine is an update of one of the namespace's Services at t, answered with the server's
// version at t.
func (g *streamGen) writeLine(ns int, t int64) []byte {
	c := g.clients[ns]
	name := fmt.Sprintf("svc-%d", (t/int64(writeInterval/time.Microsecond))%5)
	rv := serverRV(t)
	id := fmt.Sprintf("ffffffff-%04x-4%03x-8000-%012x", (ns>>12)&0xffff, ns&0xfff, t&0xffffffffffff)
	return fmt.Appendf(nil, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"%s","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/%s/services/%s","verb":"update","user":{"username":"system:serviceaccount:%s:deployer","groups":["system:authenticated"]},"sourceIPs":["10.30.0.1"],"userAgent":"kubectl/v1.33.13 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"services","namespace":"%s","name":"%s","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"responseObject":{"kind":"Service","apiVersion":"v1","metadata":{"name":"%s","namespace":"%s","resourceVersion":"%d"}},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`+"\n",
		id, c.namespace, name, c.namespace, c.namespace, name, name, c.namespace, rv, stamp(t-3000), stamp(t))
}
