#!/usr/bin/env bash
# Transport floor with an independent generator (h2load from Debian's nghttp2-client):
# one-shot ext_proc streams and unary RLS calls from pre-encoded gRPC frames, against the no-op
# server and against Sluice, each in a fresh JVM on loopback. Rounds alternate no-op and Sluice so
# that drift on a shared machine hits both; each round prints its ratio, the end the median ratio.
# See docs/benchmarks.md.
#   bench/h2load.sh [duration_s=10] [warmup_s=5] [rounds=1]
set -euo pipefail
JAR="${JAR:-bench/target/sluice-bench.jar}"
DUR="${1:-10}"; WARM="${2:-5}"; ROUNDS="${3:-1}"; PORT="${PORT:-50071}"
WORK="$(mktemp -d)"; SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$WORK"' EXIT
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)"; exit 2; }
java -jar "$JAR" floor --dump-dir "$WORK" >/dev/null

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

run() { # target path frame label -> prints a table row, leaves req/s in $RPS
  local url="http://127.0.0.1:$PORT$2"
  h2load -D "$WARM" -c 4 -m 32 -t 1 -d "$WORK/$3" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$url" >/dev/null 2>&1
  local t0; t0=$(cpu_ticks "$SPID")
  local out; out=$(h2load -D "$DUR" -c 4 -m 32 -t 1 -d "$WORK/$3" \
    -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$WORK/log.tsv" "$url" 2>&1)
  local t1; t1=$(cpu_ticks "$SPID")
  RPS=$(echo "$out" | awk '/^finished in/ {print $4}'); RPS=${RPS:-0}
  local st; st=$(echo "$out" | awk '/^status codes:/ {print $3, $4, $5, $6, $7, $8}')
  local pct; pct=$(cut -f3 "$WORK/log.tsv" | sort -n | awk '{a[NR]=$1} END {printf "%.0f µs | %.0f µs | %.0f µs", a[int(NR*0.5)], a[int(NR*0.99)], a[int(NR*0.999)]}')
  local cpu; cpu=$(echo "$t0 $t1 $DUR $RPS" | awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f | %.1f µs", ($2-$1)/hz/$3, ($4 > 0 ? ($2-$1)/hz/$3/$4*1e6 : 0)}')
  echo "| $ROUND | $4 | $1 | $RPS | $pct | $cpu | $st |"
}

serve() { # target
  java -jar "$JAR" floor --serve "$1" --port "$PORT" >"$WORK/server.log" 2>&1 &
  SPID=$!
  for _ in $(seq 100); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
}

echo "| round | workload | server | req/s | p50 | p99 | p99.9 | server CPU (cores) | server CPU per call | status codes |"
echo "|---|---|---|---|---|---|---|---|---|---|"
RATIOS_EXT=(); RATIOS_RLS=()
for ROUND in $(seq "$ROUNDS"); do
  declare -A R=()
  for target in noop sluice; do
    serve "$target"
    run "$target" /envoy.service.ext_proc.v3.ExternalProcessor/Process extproc_request_headers.grpc "ext_proc one-shot"
    R[$target-ext]=$RPS
    run "$target" /envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit rls_request.grpc "RLS unary"
    R[$target-rls]=$RPS
    kill "$SPID"; wait "$SPID" 2>/dev/null || true
  done
  RATIOS_EXT+=("$(echo "${R[sluice-ext]} ${R[noop-ext]}" | awk '{printf "%.3f", ($2 > 0 ? $1/$2 : 0)}')")
  RATIOS_RLS+=("$(echo "${R[sluice-rls]} ${R[noop-rls]}" | awk '{printf "%.3f", ($2 > 0 ? $1/$2 : 0)}')")
  echo "| $ROUND | ratio Sluice / no-op | | ext_proc ${RATIOS_EXT[-1]}, RLS ${RATIOS_RLS[-1]} | | | | | | |"
  unset R
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "median ratio over $ROUNDS round(s): ext_proc one-shot $(median "${RATIOS_EXT[@]}"), RLS unary $(median "${RATIOS_RLS[@]}") (2 cores shared by h2load and the server)"
