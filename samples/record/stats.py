#!/usr/bin/python3
"""stats.py AUDIT_LOG: counts by verb/resource/stage and by user, time span (from the lab script, extended)."""
import json, sys, collections
path = sys.argv[1]
n = 0; size = 0; keys = collections.Counter(); by = collections.Counter(); lv = collections.Counter()
users = collections.Counter(); uas = collections.Counter(); first = last = None
for line in open(path, 'rb'):
    n += 1; size += len(line)
    e = json.loads(line)
    keys.update(e.keys())
    o = e.get('objectRef') or {}
    by[(e['verb'], o.get('resource', '-') + ('/' + o['subresource'] if o.get('subresource') else ''), e['stage'])] += 1
    lv[e['level']] += 1; users[e['user']['username']] += 1; uas[(e['user']['username'], e.get('userAgent', ''))] += 1
    t = e['requestReceivedTimestamp']
    first = t if first is None or t < first else first
    last = e['stageTimestamp'] if last is None or e['stageTimestamp'] > last else last
print(f"events {n}  bytes {size}  avg_bytes_per_event {size/max(n,1):.0f}")
print(f"span {first} .. {last}")
print("levels", dict(lv))
print("top-level fields (count):", ", ".join(f"{k}({v})" for k, v in keys.most_common()))
print("\nverb resource stage -> count")
for (v, r, s), c in sorted(by.items(), key=lambda x: -x[1])[:60]: print(f"  {v:8s} {r:28s} {s:16s} {c}")
print("\nusers")
for u, c in users.most_common(30): print(f"  {c:6d} {u}")
print("\nusername | userAgent")
for (u, a), c in uas.most_common(40): print(f"  {c:6d} {u} | {a}")
