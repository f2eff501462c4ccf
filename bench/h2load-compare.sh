#!/usr/bin/env bash
# Two builds side by side on the transport floor (see bench/h2load.sh): one no-op server and
# Sluice from each jar, measured in short alternating windows with h2load (a generator apart from
# the JVMs), so that drift of a shared machine hits all three alike. Rounds come in pairs, the
# second in reverse order (no-op, A, B, then B, A, no-op), so a drift linear over the pair cancels
# in each ratio. FORKS=N starts the three servers N times (fresh JVMs, the rounds split between
# them); in every second fork B takes A's port and is started first: both builds are read in both
# places, and a JVM's own luck (its JIT's choices) is sampled N times, not once.
# Prints each build's median ratio to the no-op (overall and per fork), its server CPU per call,
# and B ÷ A paired by round. See docs/benchmarks.md.
#   bench/h2load-compare.sh JAR_A JAR_B [window_s=2] [rounds=20] [warmup_s=30]
#   SHAPE=oneshot (default: request headers + END_STREAM) | llm (the LLM-shaped stream's four
#   messages in one body + END_STREAM, tenant in the initial metadata) | rls (unary ShouldRateLimit)
#   FORKS=N (default 1); SLUICE_ARGS: extra `floor --serve sluice` flags for both builds
set -euo pipefail
A="$1"; B="$2"; WIN="${3:-2}"; ROUNDS="${4:-20}"; WARM="${5:-30}"; PORT="${PORT:-50171}"
SHAPE="${SHAPE:-oneshot}"; FORKS="${FORKS:-1}"
WORK="$(mktemp -d)"; PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; PIDS=(); }
trap 'stop_all; rm -rf "$WORK"' EXIT
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)"; exit 2; }
for jar in "$A" "$B"; do # the frames of the first jar that writes them all (the LLM one: 2026-12-07)
  java -jar "$jar" floor --dump-dir "$WORK" >/dev/null; [[ -s "$WORK/extproc_llm_stream.grpc" ]] && break
done
EXT="/envoy.service.ext_proc.v3.ExternalProcessor/Process"
HDR=()
case "$SHAPE" in
  oneshot) PATH_=$EXT; FRAME=extproc_request_headers.grpc ;;
  llm) PATH_=$EXT; FRAME=extproc_llm_stream.grpc; HDR=(-H 'x-sluice-tenant: acme') ;;
  rls) PATH_="/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"; FRAME=rls_request.grpc ;;
  *) echo "SHAPE: $SHAPE (expected oneshot, llm or rls)"; exit 2 ;;
esac
[[ -s "$WORK/$FRAME" ]] || { echo "neither jar wrote $FRAME (bench jars from before 2026-12-07?)"; exit 2; }

declare -A SPID PORTS
start() { # target jar args...
  local t="$1" jar="$2"; shift 2
  java -jar "$jar" floor --port "${PORTS[$t]}" "$@" >"$WORK/$t.log" 2>&1 &
  SPID[$t]=$!; PIDS+=("$!")
  for _ in $(seq 150); do (echo >"/dev/tcp/127.0.0.1/${PORTS[$t]}") 2>/dev/null && return; sleep 0.2; done
  echo "$t did not listen on ${PORTS[$t]}: $(tail -5 "$WORK/$t.log")" >&2; exit 1
}
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
window() { # target seconds -> "req/s cpu_µs_per_call"
  local t0 t1 out rps
  t0=$(cpu_ticks "${SPID[$1]}")
  out=$(h2load -D "$2" -c 4 -m 32 -t 1 -d "$WORK/$FRAME" -H 'content-type: application/grpc' \
    -H 'te: trailers' "${HDR[@]}" "http://127.0.0.1:${PORTS[$1]}$PATH_" 2>&1)
  t1=$(cpu_ticks "${SPID[$1]}")
  [[ "$out" == *" 2xx, 0 3xx, 0 4xx, 0 5xx"* ]] || { echo "non-2xx answers from $1: $out" >&2; return 1; }
  rps=$(echo "$out" | awk '/^finished in/ {print $4}')
  echo "$rps $t0 $t1" | awk -v hz="$HZ" -v w="$2" '{printf "%s %.2f\n", $1, ($1 > 0 ? ($3-$2)/hz/w/$1*1e6 : 0)}'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { echo "$(sort -n "$1" | head -1)–$(sort -n "$1" | tail -1)"; }

for t in a b; do : >"$WORK/$t.ratio"; done; : >"$WORK/ba.ratio"
for t in noop a b; do : >"$WORK/$t.cpu"; done
PER_FORK=$(( (ROUNDS + FORKS - 1) / FORKS ))
for fork in $(seq "$FORKS"); do
  PORTS[noop]=$PORT
  if (( fork % 2 )); then PORTS[a]=$((PORT + 1)); PORTS[b]=$((PORT + 2)); FIRST=(a b)
  else PORTS[b]=$((PORT + 1)); PORTS[a]=$((PORT + 2)); FIRST=(b a); fi
  start noop "$A" --serve noop
  for t in "${FIRST[@]}"; do
    jar=$A; [[ $t == b ]] && jar=$B
    # shellcheck disable=SC2086 # SLUICE_ARGS: flags, split on purpose
    start "$t" "$jar" --serve sluice ${SLUICE_ARGS:-}
  done
  for t in noop "${FIRST[@]}"; do window "$t" "$WARM" >/dev/null || exit 1; done
  for t in a b; do : >"$WORK/$t.fork"; done
  for r in $(seq "$PER_FORK"); do
    order=(noop a b); (( r % 2 )) || order=(b a noop)
    for t in "${order[@]}"; do
      res=$(window "$t" "$WIN") || exit 1
      eval "R_$t=${res% *}"; echo "${res#* }" >>"$WORK/$t.cpu"
    done
    for t in a b; do
      eval "echo \"\$R_$t \$R_noop\"" | awk '{printf "%.3f\n", ($2 > 0 ? $1/$2 : 0)}' | tee -a "$WORK/$t.ratio" >>"$WORK/$t.fork"
    done
    echo "$R_b $R_a" | awk '{printf "%.3f\n", ($2 > 0 ? $1/$2 : 0)}' >>"$WORK/ba.ratio"
  done
  echo "fork $fork (a on port ${PORTS[a]}, b on ${PORTS[b]}, ${FIRST[0]} started first): a $(median <"$WORK/a.fork"), b $(median <"$WORK/b.fork")"
  stop_all
done
echo "SHAPE=$SHAPE: h2load -c 4 -m 32 -t 1, $((PER_FORK * FORKS)) rounds of ${WIN} s windows (no-op, A, B; every second round reversed) in $FORKS fork(s), after ${WARM} s warm-up each; 2 cores shared"
echo
echo "| server | ratio to the no-op, median (range) | server CPU per call, median |"
echo "|---|---|---|"
echo "| no-op | 1 | $(median <"$WORK/noop.cpu") µs |"
for t in a b; do
  jar=$A; [[ $t == b ]] && jar=$B
  echo "| $t: \`$jar\` | **$(median <"$WORK/$t.ratio")** ($(range "$WORK/$t.ratio")) | $(median <"$WORK/$t.cpu") µs |"
done
echo
echo "b ÷ a, paired by round: **$(median <"$WORK/ba.ratio")** ($(range "$WORK/ba.ratio"))"
