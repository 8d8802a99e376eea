#!/usr/bin/env bash
# Peak memory of replaying audit logs of 2 N and of 20 N lines.
#
#   benches/traces/audit-memory.sh [N] [KARPSIM]
#
# Generates audit logs in a temporary folder, each with 20 Deployments
# created at 10:00 UTC and then scale subresource patches spread evenly
# over six hours (so every simulated cluster has the same size and span):
#
#   events      N patches that change replicas, each followed by 1 line
#               the replay passes over (2 N lines)
#   10x events  the same N patches, each followed by 19 such lines (20 N
#               lines: node lease renewals, reads, patches to the count a
#               Deployment already has)
#   10x changes 10 N patches that change replicas, each followed by 1 line
#               (20 N lines, ten times the pods created and deleted)
#
# Each is replayed by `karpsim run` under /usr/bin/time -v; the script
# prints the log sizes and the peak resident set sizes.
set -euo pipefail
n=${1:-5000}
karpsim=${2:-target/release/karpsim}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

generate() { # changes noise-lines-per-change file
  awk -v events="$1" -v noise="$2" '
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
        for (k = 0; k < noise; k++) {
          if (k % 3 == 0) line("update", "{\"resource\":\"leases\",\"namespace\":\"kube-node-lease\",\"name\":\"ip-10-0-1-20\",\"apiGroup\":\"coordination.k8s.io\",\"apiVersion\":\"v1\"}", ms, "")
          else if (k % 3 == 1) line("get", sprintf("{\"resource\":\"deployments\",\"namespace\":\"bench\",\"name\":\"web-%d\",\"apiGroup\":\"apps\",\"apiVersion\":\"v1\"}", d), ms, "")
          else line("patch", ref, ms, body)
        }
      }
    }' > "$3"
}

for run in "events $n 1" "10x-events $n 19" "10x-changes $((10 * n)) 1"; do
  read -r label changes noise <<< "$run"
  events=$label
  log="$work/audit-$events.jsonl"
  generate "$changes" "$noise" "$log"
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
  lines=$(wc -l < "$log")
  echo "$label: $lines lines ($size), $changes replica changes: peak RSS ${rss} KiB, wall ${wall}"
done
