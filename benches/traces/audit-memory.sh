#!/usr/bin/env bash
# Peak memory of replaying an audit log of N and of 10 N events: the log is
# read line by line, so the two peaks should match.
#
#   benches/traces/audit-memory.sh [N] [KARPSIM]
#
# Generates two audit logs in a temporary folder: 20 Deployments created at
# 10:00 UTC, then N (and 10 N) `scale` subresource patches spread evenly
# over six hours, each followed by a node lease renewal (passed over, as
# most of a real log is). Both logs cover the same six hours, so the
# simulated cluster is the same size; only the number of events differs.
# Each is replayed by `karpsim run` under /usr/bin/time -v; the script
# prints the file sizes and the peak resident set sizes.
set -euo pipefail
n=${1:-5000}
karpsim=${2:-target/release/karpsim}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

generate() { # events file
  awk -v events="$1" '
    function stamp(ms,   s) {
      s = int(ms / 1000)
      return sprintf("2026-03-02T%02d:%02d:%02d.%03d000Z", 10 + int(s / 3600), int(s % 3600 / 60), s % 60, ms % 1000)
    }
    function line(verb, ref, ms, body) {
      printf "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"RequestResponse\",\"auditID\":\"a%d\",\"stage\":\"ResponseComplete\",\"verb\":\"%s\",\"user\":{\"username\":\"bench\"},\"objectRef\":%s,\"responseStatus\":{\"metadata\":{},\"code\":200}%s,\"requestReceivedTimestamp\":\"%s\",\"stageTimestamp\":\"%s\"}\n", ++id, verb, ref, body, stamp(ms), stamp(ms)
    }
    BEGIN {
      for (d = 0; d < 20; d++) {
        ref = sprintf("{\"resource\":\"deployments\",\"namespace\":\"bench\",\"name\":\"web-%d\",\"apiGroup\":\"apps\",\"apiVersion\":\"v1\"}", d)
        body = sprintf(",\"responseObject\":{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web-%d\",\"namespace\":\"bench\"},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"web-%d\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web-%d\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}}]}}}}", d, d, d)
        line("create", ref, d, body)
      }
      span = 6 * 3600 * 1000
      for (i = 0; i < events; i++) {
        ms = 1000 + int(i * (span - 2000) / events)
        d = i % 20
        replicas = 2 + (int(i / 20) % 3)
        ref = sprintf("{\"resource\":\"deployments\",\"namespace\":\"bench\",\"name\":\"web-%d\",\"apiGroup\":\"apps\",\"apiVersion\":\"v1\",\"subresource\":\"scale\"}", d)
        body = sprintf(",\"responseObject\":{\"kind\":\"Scale\",\"apiVersion\":\"autoscaling/v1\",\"metadata\":{\"name\":\"web-%d\",\"namespace\":\"bench\"},\"spec\":{\"replicas\":%d},\"status\":{\"replicas\":2}}", d, replicas)
        line("patch", ref, ms, body)
        line("update", "{\"resource\":\"leases\",\"namespace\":\"kube-node-lease\",\"name\":\"ip-10-0-1-20\",\"apiGroup\":\"coordination.k8s.io\",\"apiVersion\":\"v1\"}", ms, "")
      }
    }' > "$2"
}

for events in "$n" "$((10 * n))"; do
  log="$work/audit-$events.jsonl"
  generate "$events" "$log"
  cat > "$work/replay-$events.yaml" <<YAML
name: audit-memory-$events
seed: 1
duration: 6h
region: us-east-1
workloads:
  - trace: audit-$events.jsonl
    format: audit-log
variants:
  - name: on-demand
    karpenter:
      nodePools: nodepools/on-demand.yaml
YAML
  mkdir -p "$work/nodepools"
  cp "$here/scenarios/nodepools/on-demand.yaml" "$work/nodepools/"
  /usr/bin/time -v "$karpsim" run "$work/replay-$events.yaml" --out "$work/out-$events" -q \
    2> "$work/time-$events.txt" > /dev/null
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time-$events.txt")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time-$events.txt")
  size=$(du -h "$log" | cut -f1)
  echo "$events scale events ($size log): peak RSS ${rss} KiB, wall ${wall}"
done
