#!/usr/bin/python3
"""watches.py AUDIT_LOG [FILTER]: every watch/list stream of an audit log (plain or .gz) and the
resourceVersions its requests asked for, in the order the apiserver received them.
A stream is username + userAgent + sourceIP + resource + namespace + query selectors; FILTER keeps
the streams whose key contains it. Used to write the samples' READMEs (counted from the log)."""
import collections, gzip, json, sys
from urllib.parse import parse_qs, urlsplit

path = sys.argv[1]
flt = sys.argv[2] if len(sys.argv) > 2 else ''
reqs = {}
for line in (gzip.open if path.endswith('.gz') else open)(path, 'rt'):
    e = json.loads(line)
    if e['verb'] not in ('watch', 'list'):
        continue
    o = e.get('objectRef') or {}
    if o.get('subresource'):
        continue
    q = parse_qs(urlsplit(e['requestURI']).query, keep_blank_values=True)
    one = lambda k: q.get(k, [None])[0]
    r = reqs.setdefault(e['auditID'], {})
    r.update(verb=e['verb'], at=e['requestReceivedTimestamp'], user=e['user']['username'],
             ua=e.get('userAgent', ''), ip=(e.get('sourceIPs') or [''])[0],
             res=o.get('resource', ''), ns=o.get('namespace', ''),
             sel=' '.join(f'{k}={one(k)}' for k in ('labelSelector', 'fieldSelector') if one(k)),
             rv=one('resourceVersion'), sie=one('sendInitialEvents'), match=one('resourceVersionMatch'),
             id=e['auditID'])
    if e['stage'] == 'ResponseComplete':
        r['code'] = (e.get('responseStatus') or {}).get('code')
        r['end'] = e['stageTimestamp']
streams = collections.defaultdict(list)
for r in sorted(reqs.values(), key=lambda r: (r['at'], r['id'])):
    key = ' | '.join((r['user'], r['ua'], r['ip'], r['res'], r['ns'] or '*', r['sel']))
    if flt in key:
        streams[key].append(r)
for key, rs in streams.items():
    print(key)
    for r in rs:
        extra = ' sendInitialEvents=%s match=%s' % (r['sie'], r['match']) if r['sie'] else ''
        print(f"  {r['at']} {r['verb']:5s} rv={r['rv']!s:8s} code={r.get('code')} end={r.get('end', '-')}{extra} {r['id'][:8]}")
