#!/usr/bin/env bash
# test-against-lab.sh: 'kubesift snapshot' and the manifests in deploy/kubernetes/ against the real
# control plane of the lab (etcd + kube-apiserver + kube-controller-manager v1.33.13 on loopback,
# see ../samples/record/lib.sh and ../../shared/lab/README.md). Not part of .ci/run: it needs the lab
# binaries (cached under $LAB, default /tmp/k8s-lab) and the ports 23790/16443 free.
#
#   bash deploy/test-against-lab.sh            # builds kubesift from this checkout
#   KUBESIFT=/path/to/kubesift bash deploy/test-against-lab.sh
#
# It
#  1. starts the control plane; creates namespace snaptest with a Service, two pods (status patched:
#     one ready, one not; the real endpoints and EndpointSlice controllers then write their
#     Endpoints and EndpointSlice), a legacy leader-election ConfigMap (created with kubectl apply,
#     so its data is also in the last-applied annotation) whose data holds a marker secret, a Lease,
#     and 25 more ConfigMaps so that the lists take several pages;
#  2. runs 'kubesift snapshot --kubeconfig <admin> --page-size 10' six times, renewing the ConfigMap
#     lock and flipping a pod's readiness in between; checks the files (names, List format, the
#     secret absent), the paginated requests in the apiserver's audit log, the rows 'kubesift
#     ingest' loads (with the file names' time as captured_at) and the finding 'kubesift analyze'
#     makes of them (election-lock-churn on the ConfigMap lock, from snapshots alone);
#  3. validates deploy/kubernetes/ with 'kubectl apply --dry-run=server' (-f and -k), applies it,
#     has the Job controller create the CronJob's pod (admission checks it; there is no scheduler,
#     so it never runs) and checks that against Pod Security "restricted" its only violation is
#     the audit log's hostPath volume; takes a snapshot as the kubesift ServiceAccount (the RBAC of
#     20-rbac.yaml suffices) and checks that it can do nothing more; checks the error of an
#     identity without RBAC; runs the pod's two command lines locally (paths mapped to a work
#     directory) on the lab's audit log;
#     validates deploy/kubernetes/dataset/ and creates its Indexed Job (go test ./deploy/ with
#     KUBESIFT_TEST_KUBECONFIG): one pod per completion index, the index passed to --partition;
#  4. stops the control plane.
# Prints "PASS: n checks" and exits 0, or lists the failed checks and exits 1.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# shellcheck source=../samples/record/lib.sh
source "$ROOT/samples/record/lib.sh"
RUN=$LAB/run/kubesift-deploy-test   # our own run directory; lib.sh's functions use $RUN
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubesift-lab-test.XXXXXX")
NS=snaptest
SECRET=lab-secret-value-must-not-be-written-5f2a
pass=0; failed=()

ok() { pass=$((pass + 1)); echo "ok    $*"; }
bad() { failed+=("$*"); echo "FAIL  $*"; }
check() { # description got want
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}

cleanup() {
  stop_all
  if [ ${#failed[@]} -eq 0 ] && [ -z "${KEEP_WORK:-}" ]; then rm -rf "$WORK"; else echo "work directory kept: $WORK" >&2; fi
}
trap cleanup EXIT; trap 'exit 130' INT TERM

ensure_binaries; ensure_pki
for p in $ETCD_PORT $ETCD_PEER_PORT $ETCD_METRICS_PORT $API_PORT $KCM_PORT; do
  port_free "$p" || { echo "port 127.0.0.1:$p is in use (another lab cluster?); stop it first" >&2; exit 1; }
done
rm -rf "$RUN"; mkdir -p "$RUN"

if [ -n "${KUBESIFT:-}" ]; then KSB=$KUBESIFT; else
  log "building kubesift"
  (cd "$ROOT" && go build -tags duckdb_arrow -o "$WORK/kubesift" .)
  KSB=$WORK/kubesift
fi
ADMIN=$CONF/admin.kubeconfig

# ------------------------------------------------------------------ 1. the cluster and its objects
start_control_plane
mknode; mkns $NS
mksvc $NS web web
mkpod $NS web-1 web; mkpod $NS web-2 web
# a pod with a literal credential in its environment: snapshots drop env
$KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: worker-1, namespace: $NS, labels: {app: worker}}
spec:
  nodeName: lab-node-1
  containers:
  - name: worker
    image: registry.invalid/worker:1.0
    env: [{name: DB_PASSWORD, value: $SECRET}]
    livenessProbe: {exec: {command: [/bin/true]}, periodSeconds: 30}
YAML
set_pod $NS web-1 True 192.0.2.11
set_pod $NS web-2 False 192.0.2.12
set_pod $NS worker-1 True 192.0.2.21

leader() { # holder renewTime transitions
  printf '{"holderIdentity":"%s","leaseDurationSeconds":15,"acquireTime":"2026-11-21T04:00:00Z","renewTime":"%s","leaderTransitions":%s}' "$1" "$2" "$3"
}
$KA apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy-lock
  namespace: $NS
  annotations:
    control-plane.alpha.kubernetes.io/leader: '$(leader op-a "$(now)" 0)'
data:
  password: $SECRET
  config.yaml: |
    token: $SECRET
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: snaptest-operator, namespace: $NS}
spec: {holderIdentity: op-lease-1, leaseDurationSeconds: 15, renewTime: "$(nowmicro)"}
YAML
for i in $(seq -w 1 25); do echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"filler-$i\",\"namespace\":\"$NS\"},\"data\":{\"k\":\"v\"}}"; done | $KA apply -f - >/dev/null

# the endpoints controller writes Endpoints web: 192.0.2.11 ready, 192.0.2.12 not ready
for _ in $(seq 1 60); do
  [ "$($KA -n $NS get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}/{.subsets[*].notReadyAddresses[*].ip}' 2>/dev/null)" = "192.0.2.11/192.0.2.12" ] && break
  sleep 0.5
done
check "Endpoints $NS/web written by the endpoints controller" \
  "$($KA -n $NS get endpoints web -o jsonpath='{.subsets[*].addresses[*].ip}/{.subsets[*].notReadyAddresses[*].ip}')" "192.0.2.11/192.0.2.12"
for _ in $(seq 1 60); do
  [ "$($KA -n $NS get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[*].endpoints[*].addresses[0]}' 2>/dev/null | wc -w)" = 2 ] && break
  sleep 0.5
done

# ------------------------------------------------------------------ 2. snapshots
SNAP=$WORK/snapshots
for n in 1 2 3 4 5 6; do
  "$KSB" snapshot --kubeconfig "$ADMIN" --out "$SNAP" --page-size 10 2>"$WORK/snapshot-$n.log" || { cat "$WORK/snapshot-$n.log" >&2; bad "snapshot $n failed"; exit 1; }
  # between snapshots: the lock is renewed (and changes holder once); web-2 becomes ready and not again
  $KA -n $NS annotate configmap legacy-lock --overwrite \
    "control-plane.alpha.kubernetes.io/leader=$(leader "$([ $n -lt 4 ] && echo op-a || echo op-b)" "$(nowmicro)" "$([ $n -lt 4 ] && echo 0 || echo 1)")" >/dev/null
  if [ $((n % 2)) = 1 ]; then set_pod $NS web-2 True 192.0.2.12; else set_pod $NS web-2 False 192.0.2.12; fi
  sleep 1.2   # file names have a resolution of one second
done
cat "$WORK/snapshot-1.log" >&2

check "files written (6 snapshots x 6 kinds)" "$(find "$SNAP" -type f | wc -l)" 36
check "no temporary files left" "$(find "$SNAP" -name '.*' | wc -l)" 0
bad_names=$(find "$SNAP" -type f -printf '%f\n' | grep -Evc '^(endpoints|endpointslices|services|pods|leases|configmaps)-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\.json$' || true)
check "file names are <kind>-<RFC3339 time>.json" "$bad_names" 0
first=$(find "$SNAP" -name 'pods-*.json' -printf '%f\n' | sort | head -1); T1=${first#pods-}; T1=${T1%.json}
check "every file is a v1 List whose items carry apiVersion and kind" \
  "$(for f in "$SNAP"/*.json; do jq -r '[.apiVersion, .kind, ([.items[] | select((.apiVersion // "") == "" or (.kind // "") == "")] | length)] | @tsv' "$f"; done | sort -u)" "$(printf 'v1\tList\t0')"
CM_TOTAL=$($KA get configmaps -A --no-headers | wc -l)
check "the ConfigMaps file has every ConfigMap ($CM_TOTAL)" "$(jq '.items | length' "$SNAP/configmaps-$T1.json")" "$CM_TOTAL"
check "the marker secret is in no snapshot file (ConfigMap data, last-applied annotation, pod env)" "$(grep -rl "$SECRET" "$SNAP" | wc -l)" 0
check "no ConfigMap carries data or binaryData" "$(jq -s '[.[].items[] | select(has("data") or has("binaryData"))] | length' "$SNAP"/configmaps-*.json)" 0
check "ConfigMap legacy-lock keeps its leader annotation" \
  "$(jq -r '.items[] | select(.metadata.name == "legacy-lock") | .metadata.annotations["control-plane.alpha.kubernetes.io/leader"] | fromjson | .holderIdentity' "$SNAP/configmaps-$T1.json")" op-a
check "ConfigMap metadata is name, namespace, uid, resourceVersion, annotations only" \
  "$(jq -r '.items[] | select(.metadata.name == "legacy-lock") | .metadata | keys | join(",")' "$SNAP/configmaps-$T1.json")" "annotations,name,namespace,resourceVersion,uid"
check "pods keep their probes" "$(jq '[.items[] | select(.metadata.namespace == "'$NS'") | .spec.containers[] | (.readinessProbe, .livenessProbe) | select(. != null)] | length' "$SNAP/pods-$T1.json")" 5

# pagination, as the apiserver saw it (its audit log)
pages=$(jq -r 'select(.userAgent | startswith("kubesift/")) | select(.stage == "ResponseComplete" and .verb == "list" and .objectRef.resource == "configmaps") | .requestURI' "$RUN/audit.log")
CM_PAGES=$(((CM_TOTAL + 9) / 10))
check "ConfigMaps listed in $CM_PAGES pages of 10 per snapshot (limit=10, then continue=)" \
  "$(grep -c 'limit=10' <<<"$pages")/$(grep -c 'continue=' <<<"$pages")" "$((6 * CM_PAGES))/$((6 * (CM_PAGES - 1)))"
check "kubesift's requests are all lists with limit=10" \
  "$(jq -r 'select(.userAgent | startswith("kubesift/")) | select(.stage == "ResponseComplete") | .verb + " " + (.requestURI | test("limit=10") | tostring)' "$RUN/audit.log" | sort -u)" "list true"

# ingest and analyze the snapshots alone
DB=$WORK/snapshots.duckdb
"$KSB" ingest --quiet --db "$DB" "$SNAP"
q() { "$KSB" query --db "$DB" -o csv "$1" | tail -n +2 | tr -d '\r"'; }
check "no ingest errors" "$(q "SELECT count(*) FROM ingest_errors")" 0
check "36 files loaded" "$(q "SELECT count(*) FROM ingest_files")" 36
check "captured_at = the file names' times" "$(q "SELECT count(DISTINCT captured_at) FROM pods")/$(q "SELECT strftime(min(captured_at), '%Y-%m-%dT%H:%M:%SZ') FROM pods")" "6/$T1"
check "all kinds of one snapshot share its time" "$(q "SELECT count(*) FROM (SELECT captured_at FROM endpoint_addresses UNION SELECT captured_at FROM services UNION SELECT captured_at FROM leader_locks UNION SELECT captured_at FROM object_annotations)")" 6
check "endpoint_addresses: Endpoints $NS/web at the first snapshot" \
  "$(q "SELECT string_agg(ip || '=' || ready, ' ' ORDER BY ip) FROM endpoint_addresses WHERE kind = 'Endpoints' AND namespace = '$NS' AND service = 'web' AND captured_at = '$T1'")" "192.0.2.11=true 192.0.2.12=false"
check "endpoint_addresses: EndpointSlice of $NS/web at the first snapshot" \
  "$(q "SELECT string_agg(ip || '=' || ready, ' ' ORDER BY ip) FROM endpoint_addresses WHERE kind = 'EndpointSlice' AND namespace = '$NS' AND service = 'web' AND captured_at = '$T1'")" "192.0.2.11=true 192.0.2.12=false"
check "endpoint_addresses: 192.0.2.12's readiness over the 6 snapshots (Endpoints)" \
  "$(q "SELECT string_agg(CASE WHEN ready THEN 'R' ELSE 'n' END, '' ORDER BY captured_at) FROM endpoint_addresses WHERE kind = 'Endpoints' AND namespace = '$NS' AND ip = '192.0.2.12'")" "nRnRnR"
check "services: $NS/web with its ClusterIP" "$(q "SELECT count(*) FROM services WHERE namespace = '$NS' AND name = 'web' AND cluster_ip LIKE '10.96.%'")" 6
check "pods: 3 in $NS per snapshot" "$(q "SELECT count(*) FROM pods WHERE namespace = '$NS' AND captured_at = '$T1'")" 3
check "pod_probes: web-1, web-2 (readiness httpGet 8080, liveness tcp 8081), worker-1 (exec)" \
  "$(q "SELECT string_agg(pod || ':' || probe || ':' || type, ' ' ORDER BY pod, probe) FROM pod_probes WHERE namespace = '$NS' AND captured_at = '$T1'")" \
  "web-1:liveness:tcp web-1:readiness:http web-2:liveness:tcp web-2:readiness:http worker-1:liveness:exec"
check "leader_locks: ConfigMap $NS/legacy-lock holders over the snapshots" \
  "$(q "SELECT string_agg(holder, ' ' ORDER BY captured_at) FROM leader_locks WHERE kind = 'ConfigMap' AND namespace = '$NS' AND name = 'legacy-lock'")" "op-a op-a op-a op-a op-b op-b"
check "leader_locks: Lease $NS/snaptest-operator and kube-system/kube-controller-manager" \
  "$(q "SELECT string_agg(DISTINCT namespace || '/' || name || ':' || lock_type, ' ' ORDER BY namespace || '/' || name || ':' || lock_type) FROM leader_locks WHERE kind = 'Lease' AND name IN ('snaptest-operator', 'kube-controller-manager')")" \
  "kube-system/kube-controller-manager:lease snaptest/snaptest-operator:lease"
check "object_annotations: the leader annotation of legacy-lock, no last-applied-configuration" \
  "$(q "SELECT count(*) FILTER (WHERE key = 'control-plane.alpha.kubernetes.io/leader' AND name = 'legacy-lock') || '/' || count(*) FILTER (WHERE key = 'kubectl.kubernetes.io/last-applied-configuration') FROM object_annotations")" "6/0"
check "the marker secret is in no table" "$(q "SELECT (SELECT count(*) FROM object_annotations WHERE value LIKE '%$SECRET%') + (SELECT count(*) FROM pods WHERE labels::VARCHAR LIKE '%$SECRET%')")" 0

rc=0; "$KSB" analyze --db "$DB" -o json >"$WORK/analyze.json" 2>"$WORK/analyze.err" || rc=$?
check "analyze exits 0 (no --fail-on)" "$rc" 0
check "analyze: election-lock-churn finds the ConfigMap lock from the snapshots alone" \
  "$(jq -r '[.findings[] | select(.rule == "election-lock-churn" and .namespace == "'$NS'" and .name == "legacy-lock")] | length' "$WORK/analyze.json")" 1
jq -r '.findings[] | "      finding: \(.severity) \(.rule) \(.namespace)/\(.name): \(.summary)"' "$WORK/analyze.json" | cut -c1-220

# ------------------------------------------------------------------ 3. the manifests
K=$ROOT/deploy/kubernetes
if $KA apply --dry-run=server -f "$K/00-namespace.yaml" >"$WORK/dry-ns.log" 2>&1; then ok "dry-run=server: 00-namespace.yaml"; else bad "dry-run=server 00-namespace.yaml: $(cat "$WORK/dry-ns.log")"; fi
# A server-side dry run does not create the namespace, so the namespaced objects need it for real.
$KA apply -f "$K/00-namespace.yaml" >/dev/null
if $KA apply --dry-run=server -f "$K/" >"$WORK/dry-f.log" 2>&1; then ok "dry-run=server: kubectl apply -f deploy/kubernetes/ ($(grep -c 'server dry run' "$WORK/dry-f.log") objects)"; else bad "dry-run=server -f: $(cat "$WORK/dry-f.log")"; fi
cat "$WORK/dry-f.log"
if $KA apply --dry-run=server -k "$ROOT/deploy" >"$WORK/dry-k.log" 2>&1; then ok "dry-run=server: kubectl apply -k deploy/"; else bad "dry-run=server -k: $(cat "$WORK/dry-k.log")"; fi
if $KA apply -f "$K/" >"$WORK/apply.log" 2>&1; then ok "kubectl apply -f deploy/kubernetes/"; else bad "apply: $(cat "$WORK/apply.log")"; fi

# the Job controller turns the CronJob's template into a pod, through admission
$KA -n kubesift create job kubesift-manual --from=cronjob/kubesift >/dev/null
for _ in $(seq 1 60); do [ -n "$($KA -n kubesift get pods -l job-name=kubesift-manual -o name 2>/dev/null)" ] && break; sleep 0.5; done
POD=$($KA -n kubesift get pods -l job-name=kubesift-manual -o jsonpath='{.items[0].metadata.name}')
check "the CronJob's Job created its pod" "$([ -n "$POD" ] && echo yes)" yes
pss=$($KA label --dry-run=server --overwrite ns kubesift pod-security.kubernetes.io/enforce=restricted 2>&1 >/dev/null || true)
echo "$pss" | sed 's/^/      /'
check "against Pod Security 'restricted' the pod's only violation is its volume types" \
  "$(grep "$POD" <<<"$pss" | sed 's/^Warning: [^:]*: //')" "restricted volume types"
# the details: the CronJob's pod template, dry-run into a namespace that enforces "restricted"
$KA create namespace pss-restricted >/dev/null
$KA label ns pss-restricted pod-security.kubernetes.io/enforce=restricted >/dev/null
$KA -n pss-restricted create serviceaccount kubesift >/dev/null
pss=$($KA -n kubesift get cronjob kubesift -o json | jq '{apiVersion: "v1", kind: "Pod", metadata: {name: "kubesift", namespace: "pss-restricted"}, spec: .spec.jobTemplate.spec.template.spec}' |
  $KA apply --dry-run=server -f - 2>&1 || true)
echo "      $pss"
check "under 'restricted' the pod is refused for the audit hostPath volume only" \
  "$(sed -n 's/.*violates PodSecurity "restricted:latest": //p' <<<"$pss")" 'restricted volume types (volume "audit" uses restricted volume type "hostPath")'

# RBAC: the ServiceAccount can take a snapshot, and can do nothing else
SAKC=$(sa_kubeconfig kubesift kubesift)
if "$KSB" snapshot --quiet --kubeconfig "$SAKC" --out "$WORK/sa-snapshots" 2>"$WORK/sa.log"; then
  ok "snapshot as ServiceAccount kubesift/kubesift ($(find "$WORK/sa-snapshots" -type f | wc -l) files)"
else bad "snapshot as the ServiceAccount: $(cat "$WORK/sa.log")"; fi
can() { $KA auth can-i --as=system:serviceaccount:kubesift:kubesift "$@" 2>/dev/null || true; }
check "RBAC allows get/list on the six kinds" \
  "$(for r in endpoints endpointslices.discovery.k8s.io services pods leases.coordination.k8s.io configmaps; do can list "$r"; can get "$r"; done | sort | uniq -c | awk '{print $1, $2}')" "12 yes"
check "RBAC denies watch, writes, Secrets, nodes" \
  "$(for a in "watch pods" "create configmaps" "update leases.coordination.k8s.io" "delete pods" "get secrets" "list secrets" "list nodes" "patch endpoints"; do can $a; done | sort | uniq -c | awk '{print $1, $2}')" "8 no"
# an identity without that RBAC gets an error that names the resource and the verb
NOKC=$(sa_kubeconfig $NS default)
rc=0; "$KSB" snapshot --kubeconfig "$NOKC" --out "$WORK/denied" 2>"$WORK/denied.log" || rc=$?
check "snapshot without RBAC exits 1" "$rc" 1
check "its error names the resource and the missing verb" \
  "$(grep -c 'listing endpoints in all namespaces: forbidden: kubesift needs the "list" verb on endpoints' "$WORK/denied.log")" 1
check "and writes no file" "$(find "$WORK/denied" -type f 2>/dev/null | wc -l)" 0
sed 's/^/      /' "$WORK/denied.log" | cut -c1-250

# the pod's two command lines, run here with its paths mapped into the work directory
CTR=$WORK/ctr; mkdir -p "$CTR/var/lib/kubesift" "$CTR/var/log/kubernetes/audit"
cp "$RUN/audit.log" "$CTR/var/log/kubernetes/audit/"
map() { sed -e "s#/var/lib/kubesift#$CTR/var/lib/kubesift#g; s#/var/log/kubernetes/audit#$CTR/var/log/kubernetes/audit#g"; }
mapfile -t INIT < <($KA -n kubesift get pod "$POD" -o json | jq -r '.spec.initContainers[0].args[]' | map)
mapfile -t MAIN < <($KA -n kubesift get pod "$POD" -o json | jq -r '.spec.containers[0].args[]' | map)
echo "      init: kubesift ${INIT[*]}"; echo "      main: kubesift ${MAIN[*]}"
rc=0; "$KSB" "${INIT[@]}" --kubeconfig "$SAKC" 2>"$WORK/init.log" || rc=$?
check "the init container's command line (as the ServiceAccount) exits 0" "$rc" 0
check "it wrote 6 snapshot files" "$(find "$CTR/var/lib/kubesift/snapshots" -type f | wc -l)" 6
rc=0; "$KSB" "${MAIN[@]}" >"$WORK/main.out" 2>"$WORK/main.err" || rc=$?
check "the main container's command line exits 0 or 3 (findings)" "$([ $rc = 0 ] || [ $rc = 3 ] && echo yes || echo "no (exit $rc: $(head -c 600 "$WORK/main.err"))")" yes
check "it made the database on the PVC path" "$([ -s "$CTR/var/lib/kubesift/kubesift.duckdb" ] && echo yes)" yes
for i in "${!MAIN[@]}"; do
  if [ "${MAIN[$i]}" = --metrics-file ]; then
    check "it wrote the metrics file ${MAIN[$((i + 1))]#"$CTR"}" "$(grep -c '^kubesift_' "${MAIN[$((i + 1))]}" 2>/dev/null | awk '$1 > 0 {print "yes"}')" yes
  fi
done
head -5 "$WORK/main.out" | cut -c1-200 | sed 's/^/      /'
# the next scheduled run: a new snapshot, only new data loaded, no duplicate rows
sleep 1.1
rc=0; "$KSB" "${INIT[@]}" --quiet --kubeconfig "$SAKC" 2>>"$WORK/init.log" || rc=$?
check "second run: the init command line exits 0" "$rc" 0
rc=0; "$KSB" "${MAIN[@]}" >"$WORK/main2.out" 2>"$WORK/main2.err" || rc=$?
check "second run: the main command line exits 0 or 3" "$([ $rc = 0 ] || [ $rc = 3 ] && echo yes || echo "no (exit $rc: $(head -c 600 "$WORK/main2.err"))")" yes
DB=$CTR/var/lib/kubesift/kubesift.duckdb
check "second run: two snapshots in the database, each pod once per snapshot" \
  "$(q "SELECT count(DISTINCT captured_at) || '/' || (count(*) = count(DISTINCT (captured_at, namespace, name))) FROM pods WHERE source = 'snapshot'")" "2/true"
check "second run: each audit event once" "$(q "SELECT (count(*) = count(DISTINCT (audit_id, stage)))::VARCHAR FROM audit_events")" true

# the dataset manifests (kubernetes/dataset/): dry-run=server, and the Indexed Job's pods
if (cd "$ROOT" && KUBESIFT_TEST_KUBECONFIG=$ADMIN go test -count=1 -run TestDatasetManifests -v ./deploy/) >"$WORK/dataset-manifests.log" 2>&1 &&
  ! grep -q -- '--- SKIP' "$WORK/dataset-manifests.log"; then
  ok "dataset manifests: dry-run=server and the Indexed Job's pods (go test ./deploy/)"
else bad "dataset manifests: $(tail -20 "$WORK/dataset-manifests.log")"; fi

# ------------------------------------------------------------------ 4. done (the trap stops the cluster)
if [ ${#failed[@]} -eq 0 ]; then echo "PASS: $pass checks"; exit 0; fi
echo "FAILED: ${#failed[@]} of $((pass + ${#failed[@]})) checks:"; printf '  %s\n' "${failed[@]}"; exit 1
