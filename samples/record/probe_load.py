#!/usr/bin/python3
"""probe_load.py: kubelet-like probe load from the lab "node" namespace to lab "pod" IPs.

Every PERIOD seconds, for every pod IP: one httpGet readiness probe to :HTTP_PORT
(GET /healthz, Connection: close) and one tcpSocket liveness probe to :TCP_PORT
(connect + close). Sockets use SO_LINGER{1,1} like kubelet's ProbeDialer, so every
probe leaves one TIME_WAIT conntrack entry for 120 s. Bounded by --duration.
Only 10.200.0.x addresses are accepted. Prints one line per round to stdout.
"""
import argparse, socket, struct, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--ips", required=True, help="comma-separated pod IPs (10.200.0.x)")
ap.add_argument("--period", type=float, default=1.0)
ap.add_argument("--duration", type=float, default=60.0)
ap.add_argument("--http-port", type=int, default=8080)
ap.add_argument("--tcp-port", type=int, default=8081)
ap.add_argument("--timeout", type=float, default=0.3)
a = ap.parse_args()
ips = a.ips.split(",")
for ip in ips:
    if not ip.startswith("10.200.0."):
        sys.exit("refusing non-lab address %s" % ip)
if a.duration > 300:
    sys.exit("duration capped at 300 s")

LINGER = struct.pack("ii", 1, 1)

def probe(ip, port, http):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(a.timeout)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER)
    try:
        s.connect((ip, port))
        if http:
            s.sendall(("GET /healthz HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: kube-probe/1.33\r\n"
                       "Accept: */*\r\nConnection: close\r\n\r\n" % (ip, port)).encode())
            data = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                data += b
            return data.startswith(b"HTTP/1.1 200")
        return True
    except OSError:
        return False
    finally:
        s.close()

t0 = time.monotonic()
rnd = 0
while time.monotonic() - t0 < a.duration:
    start = time.monotonic()
    ok = fail = 0
    for ip in ips:
        for port, http in ((a.http_port, True), (a.tcp_port, False)):
            if probe(ip, port, http):
                ok += 1
            else:
                fail += 1
    rnd += 1
    print("%s round=%d ok=%d fail=%d" % (time.strftime("%H:%M:%S", time.gmtime()), rnd, ok, fail), flush=True)
    time.sleep(max(0.0, a.period - (time.monotonic() - start)))
