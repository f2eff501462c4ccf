#!/usr/bin/env bash
# async-profiler (CPU, every 100 µs of a thread's CPU) on each server child of the floor, attached
# after the warm-up and stopped before the last round ends, so the profiles hold measured windows
# only; one collapsed-stack file per target. async-profiler's jar comes from Maven Central
# (tools.profiler:async-profiler:4.2, its linux-x64 library inside). See docs/benchmarks.md,
# "Profiling the floor's servers".
#   bench/floor-profile.sh SHAPE TARGETS OUT_DIR [extra floor args...]
#   e.g. bench/floor-profile.sh llm sluice,noop-answers /tmp/prof
# The idle servers are not paused (--no-pause-idle: a stopped JVM cannot be attached to); the
# profiler samples CPU only, so an idle server adds no samples.
set -euo pipefail
SHAPE="$1"; TARGETS="$2"; OUT="$3"; shift 3
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WARM=${WARM:-30}; ROUNDS=${ROUNDS:-8}; DUR=${DUR:-3}
N=$(( $(tr ',' '\n' <<<"$TARGETS" | grep -vc '^noop$') + 1 )) # the no-op always runs
JAR="$HOME/.m2/repository/tools/profiler/async-profiler/4.2/async-profiler-4.2.jar"
[[ -f "$JAR" ]] || mvn -B -q dependency:get -Dartifact=tools.profiler:async-profiler:4.2
mkdir -p "$OUT/lib"; (cd "$OUT/lib" && unzip -o -q "$JAR" 'linux-x64/*')
LIB="$OUT/lib/linux-x64/libasyncProfiler.so"
javac -d "$OUT/attach" "$ROOT/bench/scripts/AsyncAttach.java" # (the source launcher's attach fails)
attach() { java -cp "$OUT/attach" AsyncAttach "$1" "$LIB" "$2"; }
java -jar "$ROOT/bench/target/sluice-bench.jar" floor --separate --no-pause-idle --shape "$SHAPE" \
  --targets "$TARGETS" --rounds $ROUNDS --duration $DUR --warmup $WARM --threads \
  --server-jvm-arg "-Dfloorprofile={target}" "$@" > "$OUT/floor-$SHAPE.log" 2>&1 &
FLOOR=$!
# the warm-up runs until every server's JIT has settled (or its longest): attach after that
until grep "warm cycle" "$OUT/floor-$SHAPE.log" | grep -vq "NOT_YET$"; do
  kill -0 $FLOOR 2>/dev/null || { cat "$OUT/floor-$SHAPE.log"; exit 1; }; sleep 0.5
done
sleep 2
PIDS=()
for p in $(pgrep -P $FLOOR -f "Dfloorprofile=[a-z]"); do # its own servers only
  t=$(tr '\0' ' ' < "/proc/$p/cmdline" | grep -o "Dfloorprofile=[a-z-]*" | cut -d= -f2)
  attach "$p" "start,event=cpu,interval=100us" && PIDS+=("$p:$t")
done
sleep $((ROUNDS * N * (DUR + 1) - 6))
for pt in "${PIDS[@]}"; do
  attach "${pt%%:*}" "stop,file=$OUT/$SHAPE-${pt##*:}.collapsed,collapsed"
done
wait $FLOOR
echo "profiles: $OUT/$SHAPE-*.collapsed; the floor's tables: $OUT/floor-$SHAPE.log"
