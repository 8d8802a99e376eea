#!/usr/bin/env bash
# Times the diurnal day at x1/x3/x5/x10, both variants, for two karpsim
# binaries run alternately (before, after, before, after ...), one variant
# per process with --jobs 1, and prints CSV rows:
#   scale,variant,build,round,wall_s,user_s,max_rss_kb
# Usage: benches/diurnal/measure.sh BEFORE AFTER [ROUNDS]
set -euo pipefail
before=$1
after=$2
rounds=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "scale,variant,build,round,wall_s,user_s,max_rss_kb"
for round in $(seq 1 "$rounds"); do
  for scale in 1 3 5 10; do
    for variant in consolidating when-empty; do
      for build in before after; do
        bin=$before
        [ "$build" = after ] && bin=$after
        /usr/bin/time -o "$out/time" -f "%e,%U,%M" "$bin" run "$here/diurnal-x$scale.yaml" \
          --variant "$variant" --jobs 1 -q --out "$out/report-$build" > /dev/null
        echo "x$scale,$variant,$build,$round,$(cat "$out/time")"
      done
      if ! diff -r "$out/report-before" "$out/report-after" > /dev/null; then
        echo "x$scale $variant: the two builds' reports differ" >&2
      fi
    done
  done
done
