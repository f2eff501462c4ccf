#!/usr/bin/env bash
# Transport floor with an independent generator (h2load from Debian's nghttp2-client):
# one-shot ext_proc streams and unary RLS calls from pre-encoded gRPC frames, against the no-op
# server and against Sluice, each in a fresh JVM on loopback. See docs/benchmarks.md.
#   bench/h2load.sh [duration_s=10] [warmup_s=5]
set -euo pipefail
JAR="${JAR:-bench/target/sluice-bench.jar}"
DUR="${1:-10}"; WARM="${2:-5}"; PORT="${PORT:-50071}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)"; exit 2; }
java -jar "$JAR" floor --dump-dir "$WORK" >/dev/null

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

run() { # target path frame label
  local url="http://127.0.0.1:$PORT$2"
  h2load -D "$WARM" -c 4 -m 32 -t 1 -d "$WORK/$3" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$url" >/dev/null 2>&1
  local t0; t0=$(cpu_ticks "$SPID")
  local out; out=$(h2load -D "$DUR" -c 4 -m 32 -t 1 -d "$WORK/$3" \
    -H 'content-type: application/grpc' -H 'te: trailers' --log-file="$WORK/log.tsv" "$url" 2>&1)
  local t1; t1=$(cpu_ticks "$SPID")
  local rps; rps=$(echo "$out" | awk '/^finished in/ {print $4}')
  local st; st=$(echo "$out" | awk '/^status codes:/ {print $3, $4, $5, $6, $7, $8}')
  local pct; pct=$(cut -f3 "$WORK/log.tsv" | sort -n | awk '{a[NR]=$1} END {printf "%.0f µs | %.0f µs | %.0f µs", a[int(NR*0.5)], a[int(NR*0.99)], a[int(NR*0.999)]}')
  local cores; cores=$(echo "$t0 $t1 $DUR" | awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($2-$1)/hz/$3}')
  echo "| $4 | $1 | $rps | $pct | $cores | $st |"
}

echo "| workload | server | req/s | p50 | p99 | p99.9 | server CPU (cores) | status codes |"
echo "|---|---|---|---|---|---|---|---|"
for target in noop sluice; do
  java -jar "$JAR" floor --serve "$target" --port "$PORT" >"$WORK/server.log" 2>&1 &
  SPID=$!
  for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
  run "$target" /envoy.service.ext_proc.v3.ExternalProcessor/Process extproc_request_headers.grpc "ext_proc one-shot"
  run "$target" /envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit rls_request.grpc "RLS unary"
  kill "$SPID"; wait "$SPID" 2>/dev/null || true
done
