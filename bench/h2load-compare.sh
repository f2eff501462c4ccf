#!/usr/bin/env bash
# Two builds side by side on the transport floor (see bench/h2load.sh): one no-op ext_proc server
# and Sluice from each jar, measured in short alternating windows (no-op, A, B, no-op, A, B, ...)
# with h2load's one-shot ext_proc frame, so that drift of a shared machine hits all three alike.
# Prints each build's median ratio to the no-op and its server CPU per call. See docs/benchmarks.md.
#   bench/h2load-compare.sh JAR_A JAR_B [window_s=2] [rounds=20] [warmup_s=30]
#   (SLUICE_ARGS: extra `floor --serve sluice` flags for both builds, e.g. --deadline-header)
set -euo pipefail
A="$1"; B="$2"; WIN="${3:-2}"; ROUNDS="${4:-20}"; WARM="${5:-30}"; PORT="${PORT:-50171}"
WORK="$(mktemp -d)"; PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)"; exit 2; }
java -jar "$A" floor --dump-dir "$WORK" >/dev/null

declare -A SPID PORTS
PORTS[noop]=$PORT; PORTS[a]=$((PORT + 1)); PORTS[b]=$((PORT + 2))
start() { # target jar args...
  local t="$1" jar="$2"; shift 2
  java -jar "$jar" floor --port "${PORTS[$t]}" "$@" >"$WORK/$t.log" 2>&1 &
  SPID[$t]=$!; PIDS+=("$!")
  for _ in $(seq 150); do (echo >"/dev/tcp/127.0.0.1/${PORTS[$t]}") 2>/dev/null && break; sleep 0.2; done
}
start noop "$A" --serve noop
# shellcheck disable=SC2086 # SLUICE_ARGS: flags, split on purpose
start a "$A" --serve sluice ${SLUICE_ARGS:-}
# shellcheck disable=SC2086
start b "$B" --serve sluice ${SLUICE_ARGS:-}

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
PATH_="/envoy.service.ext_proc.v3.ExternalProcessor/Process"
window() { # target seconds -> "req/s cpu_µs_per_call"
  local t0 t1 out rps
  t0=$(cpu_ticks "${SPID[$1]}")
  out=$(h2load -D "$2" -c 4 -m 32 -t 1 -d "$WORK/extproc_request_headers.grpc" \
    -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:${PORTS[$1]}$PATH_" 2>&1)
  t1=$(cpu_ticks "${SPID[$1]}")
  [[ "$out" == *" 2xx, 0 3xx, 0 4xx, 0 5xx"* ]] || { echo "non-2xx answers from $1: $out" >&2; return 1; }
  rps=$(echo "$out" | awk '/^finished in/ {print $4}')
  echo "$rps $t0 $t1" | awk -v hz="$HZ" -v w="$2" '{printf "%s %.2f\n", $1, ($1 > 0 ? ($3-$2)/hz/w/$1*1e6 : 0)}'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for t in noop a b; do window "$t" "$WARM" >/dev/null || exit 1; done
for t in a b; do : >"$WORK/$t.ratio"; done
for t in noop a b; do : >"$WORK/$t.cpu"; done
for _ in $(seq "$ROUNDS"); do
  for t in noop a b; do
    res=$(window "$t" "$WIN") || exit 1
    eval "R_$t=${res% *}"; echo "${res#* }" >>"$WORK/$t.cpu"
  done
  for t in a b; do eval "echo \"\$R_$t \$R_noop\"" | awk '{printf "%.3f\n", ($2 > 0 ? $1/$2 : 0)}' >>"$WORK/$t.ratio"; done
done
echo "h2load -c 4 -m 32 -t 1, $ROUNDS rounds of ${WIN} s windows (no-op, A, B) after ${WARM} s warm-up each; 2 cores shared"
echo
echo "| server | ratio to the no-op, median (range) | server CPU per call, median |"
echo "|---|---|---|"
echo "| no-op | 1 | $(median <"$WORK/noop.cpu") µs |"
for t in a b; do
  jar=$A; [[ $t == b ]] && jar=$B
  echo "| $t: \`$jar\` | **$(median <"$WORK/$t.ratio")** ($(sort -n "$WORK/$t.ratio" | head -1)–$(sort -n "$WORK/$t.ratio" | tail -1)) | $(median <"$WORK/$t.cpu") µs |"
done
