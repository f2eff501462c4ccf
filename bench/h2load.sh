#!/usr/bin/env bash
# Transport floor with an independent generator (h2load from Debian's nghttp2-client): one-shot
# and LLM-shaped ext_proc streams and unary RLS calls from pre-encoded gRPC frames, against the no-op server and
# against Sluice, both JVMs started once and warmed up, then measured in short alternating windows
# (no-op, Sluice, no-op, Sluice, ...) so that drift of a shared machine hits both alike. Each pair
# of windows gives a ratio; the summary is the median (and range) of those ratios.
# See docs/benchmarks.md.
#   bench/h2load.sh [window_s=3] [pairs=10] [warmup_s=10]     (JAVA_OPTS: JVM flags for both servers;
#                                                            ONLY=oneshot,llm,rls: the workloads run
#                                                            (ONLY=ext_proc: oneshot; ONLY=RLS: rls);
#                                                            llm: the LLM-shaped stream's four messages
#                                                            in one body, END_STREAM after the last;
#                                                            REDIS=host:port: Sluice on the Redis store,
#                                                            pools leased as replica shares;
#                                                            DEADLINE_HEADER=1: the admit sets
#                                                            x-sluice-deadline-ms, the default)
set -euo pipefail
JAR="${JAR:-bench/target/sluice-bench.jar}"
WIN="${1:-3}"; PAIRS="${2:-10}"; WARM="${3:-10}"; PORT="${PORT:-50071}"
WORK="$(mktemp -d)"; PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)"; exit 2; }
java -jar "$JAR" floor --dump-dir "$WORK" >/dev/null

declare -A SPID PORTS
PORTS[noop]=$PORT; PORTS[sluice]=$((PORT + 1))
for target in noop sluice; do
  extra=(); [[ "$target" == sluice && -n "${REDIS:-}" ]] && extra=(--redis "$REDIS")
  [[ "$target" == sluice && -n "${DEADLINE_HEADER:-}" ]] && extra+=(--deadline-header)
  java ${JAVA_OPTS:-} -jar "$JAR" floor --serve "$target" --port "${PORTS[$target]}" "${extra[@]}" >"$WORK/$target.log" 2>&1 &
  SPID[$target]=$!; PIDS+=("$!")
  for _ in $(seq 150); do (echo >"/dev/tcp/127.0.0.1/${PORTS[$target]}") 2>/dev/null && break; sleep 0.2; done
done

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

window() { # target path frame seconds [log] -> echo "req/s cpu_seconds"
  local url="http://127.0.0.1:${PORTS[$1]}$2" t0 t1 out rps
  t0=$(cpu_ticks "${SPID[$1]}")
  out=$(h2load -D "$4" -c 4 -m 32 -t 1 -d "$WORK/$3" -H 'content-type: application/grpc' \
    -H 'te: trailers' "${HDR[@]}" ${5:+--log-file="$5"} "$url" 2>&1)
  t1=$(cpu_ticks "${SPID[$1]}")
  rps=$(echo "$out" | awk '/^finished in/ {print $4}')
  if [[ "$out" != *" 2xx, 0 3xx, 0 4xx, 0 5xx"* ]]; then
    echo "non-2xx answers from $1: $out" >&2; return 1
  fi
  echo "${rps:-0} $(echo "$t0 $t1" | awk -v hz="$HZ" '{print ($2-$1)/hz}')"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "h2load -c 4 -m 32 -t 1 (128 streams in flight), $PAIRS alternating pairs of ${WIN} s windows after ${WARM} s warm-up each; 2 cores shared by h2load and both server JVMs (idle one waits)"
echo
echo "| workload | server | req/s median (range) | server CPU per call, median | p50 | p99 | p99.9 |"
echo "|---|---|---|---|---|---|---|"
for wl in "oneshot|ext_proc one-shot|/envoy.service.ext_proc.v3.ExternalProcessor/Process|extproc_request_headers.grpc" \
          "llm|ext_proc LLM-shaped|/envoy.service.ext_proc.v3.ExternalProcessor/Process|extproc_llm_stream.grpc" \
          "rls|RLS unary|/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit|rls_request.grpc"; do
  IFS='|' read -r key label path frame <<<"$wl"
  HDR=(); [[ $key == llm ]] && HDR=(-H 'x-sluice-tenant: acme') # as the Java floor's LLM stream
  case "${ONLY:-}" in # ONLY=ext_proc and ONLY=RLS: their meaning before the LLM shape was added
    "") ;; ext_proc) [[ $key == oneshot ]] || continue ;; RLS) [[ $key == rls ]] || continue ;;
    *) [[ ",$ONLY," == *",$key,"* ]] || continue ;;
  esac
  for target in noop sluice; do window "$target" "$path" "$frame" "$WARM" >/dev/null || exit 1; done
  : >"$WORK/ratios"
  for target in noop sluice; do : >"$WORK/$target.rps"; : >"$WORK/$target.cpu"; done
  for i in $(seq "$PAIRS"); do
    for target in noop sluice; do
      res=$(window "$target" "$path" "$frame" "$WIN") || exit 1
      rps=${res% *}; cpu=${res#* }
      echo "$rps" >>"$WORK/$target.rps"
      echo "$rps $cpu $WIN" | awk '{printf "%.2f\n", ($1 > 0 ? $2/$3/$1*1e6 : 0)}' >>"$WORK/$target.cpu"
      eval "R_$target=$rps"
    done
    echo "$R_sluice $R_noop" | awk '{printf "%.3f\n", ($2 > 0 ? $1/$2 : 0)}' >>"$WORK/ratios"
  done
  for target in noop sluice; do # latency from one more window each (logging costs h2load CPU)
    window "$target" "$path" "$frame" "$WIN" "$WORK/log.tsv" >/dev/null || exit 1
    pct=$(cut -f3 "$WORK/log.tsv" | sort -n | awk '{a[NR]=$1} END {printf "%.0f µs | %.0f µs | %.0f µs", a[int(NR*0.5)], a[int(NR*0.99)], a[int(NR*0.999)]}')
    echo "| $label | $target | $(median <"$WORK/$target.rps") ($(sort -n "$WORK/$target.rps" | head -1)–$(sort -n "$WORK/$target.rps" | tail -1)) | $(median <"$WORK/$target.cpu") µs | $pct |"
  done
  echo "| $label | **ratio Sluice / no-op** | **$(median <"$WORK/ratios")** (pairs: $(sort -n "$WORK/ratios" | head -1)–$(sort -n "$WORK/ratios" | tail -1)) | | | | |"
done
