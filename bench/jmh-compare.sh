#!/usr/bin/env bash
# Two builds side by side in one JMH run: the benchmarks jar of each commit (built from a scratch
# copy of that commit's tree, `-Pjmh`, offline), then the named benchmark alternating old and new
# for N rounds (old, new, new, old, old, new, ... so that neither always runs second), so drift of
# a shared machine hits both alike. Prints each round's score and bytes/op side by side, the
# medians, and the load average before and after each run. See docs/benchmarks.md.
#   bench/jmh-compare.sh OLD NEW [benchmark=ExtProcStreamBenchmark.admittedStream] [rounds=4]
#   OLD, NEW: a commit (anything `git rev-parse` reads), `.` for this checkout as it is, or a
#   benchmarks jar already built.
#   JMH_ARGS: the JMH options of each run (default `-f 1 -wi 3 -w 2s -i 5 -r 2s`, the figures' own);
#   `-prof gc` is always added for the bytes.
#   JMH_JARS: where built jars are kept by commit, reused by the next run (default /tmp/sluice-jmh-jars).
# Example (the admitted stream of 2026-12-03 against this checkout):
#   bench/jmh-compare.sh 9419daf8 . ExtProcStreamBenchmark.admittedStream 4
set -euo pipefail
OLD="$1"; NEW="$2"; BENCH="${3:-ExtProcStreamBenchmark.admittedStream}"; ROUNDS="${4:-4}"
JMH_ARGS="${JMH_ARGS:--f 1 -wi 3 -w 2s -i 5 -r 2s}"
JARS="${JMH_JARS:-/tmp/sluice-jmh-jars}"
ROOT="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$JARS"
command -v jq >/dev/null || { echo "jq not found (apt-get install jq)"; exit 2; }

# jar_of REV -> path of its benchmarks jar (built once per commit; `.` is rebuilt every time)
jar_of() {
  local rev="$1" sha src
  if [[ -f "$rev" && "$rev" == *.jar ]]; then echo "$rev"; return; fi
  if [[ "$rev" == "." ]]; then
    (cd "$ROOT" && mvn -B -o -q -Pjmh -DskipTests package -pl server -am) >&2
    cp "$ROOT/server/target/benchmarks.jar" "$WORK/this.jar"
    echo "$WORK/this.jar"; return
  fi
  sha="$(git -C "$ROOT" rev-parse --verify "$rev^{commit}")"
  if [[ ! -f "$JARS/$sha.jar" ]]; then
    src="$WORK/src-$sha"
    mkdir -p "$src"
    git -C "$ROOT" archive "$sha" | tar -x -C "$src" # a scratch copy of the commit's tree
    echo "building ${sha:0:8} in $src (mvn -B -o -q -Pjmh -DskipTests package -pl server -am)" >&2
    (cd "$src" && mvn -B -o -q -Pjmh -DskipTests package -pl server -am) >&2
    cp "$src/server/target/benchmarks.jar" "$JARS/$sha.jar"
    rm -rf "$src"
  fi
  echo "$JARS/$sha.jar"
}

label() {
  if [[ "$1" == "." ]]; then echo "this checkout ($(git -C "$ROOT" rev-parse --short HEAD) and its changes)"
  elif [[ -f "$1" ]]; then echo "$1"
  else git -C "$ROOT" log -1 --format='%h %ad %s' --date=short "$1" | cut -c1-90; fi
}
A_JAR="$(jar_of "$OLD")"; B_JAR="$(jar_of "$NEW")"
load() { cut -d' ' -f1 /proc/loadavg; }

# run WHICH ROUND: one JMH run of the benchmark, its result as JSON in $WORK/WHICH-ROUND.json
run() {
  local jar="$A_JAR"; [[ "$1" == new ]] && jar="$B_JAR"
  local before; before="$(load)"
  # shellcheck disable=SC2086 # JMH_ARGS: options, split on purpose
  java -jar "$jar" "$BENCH" $JMH_ARGS -prof gc -rf json -rff "$WORK/$1-$2.json" >"$WORK/$1-$2.log" 2>&1 ||
    { echo "JMH failed ($1, round $2):" >&2; tail -20 "$WORK/$1-$2.log" >&2; exit 1; }
  echo "$before $(load)" >"$WORK/$1-$2.load"
}
# score FILE -> "score error unit bytes_per_op"
score() {
  jq -r '.[0] | [.primaryMetric.score, .primaryMetric.scoreError, .primaryMetric.scoreUnit,
    ((.secondaryMetrics | to_entries | map(select(.key | endswith("gc.alloc.rate.norm")))
      | .[0].value.score) // "nan")] | @tsv' "$1"
}

for r in $(seq "$ROUNDS"); do
  if (( r % 2 )); then run old "$r"; run new "$r"; else run new "$r"; run old "$r"; fi
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "JMH \`$BENCH\` $JMH_ARGS -prof gc, $ROUNDS rounds alternating (odd rounds old first);" \
  "$(nproc) cores; load average before → after each run"
echo "old: $(label "$OLD") ($A_JAR)"
echo "new: $(label "$NEW") ($B_JAR)"
echo
echo "| round | old | old B/op | load | new | new B/op | load |"
echo "|---|---|---|---|---|---|---|"
for r in $(seq "$ROUNDS"); do
  row="| $r"
  for w in old new; do
    read -r s e u b < <(score "$WORK/$w-$r.json")
    printf '%s\n' "$s" >>"$WORK/$w.scores"; printf '%s\n' "$b" >>"$WORK/$w.bytes"; echo "$u" >"$WORK/unit"
    row+="$(printf ' | %.3f ± %.3f %s | %.0f | %s' "$s" "$e" "$u" "$b" "$(sed 's/ / → /' "$WORK/$w-$r.load")")"
  done
  echo "$row |"
done
mo="$(median <"$WORK/old.scores")"; mn="$(median <"$WORK/new.scores")"
bo="$(median <"$WORK/old.bytes")"; bn="$(median <"$WORK/new.bytes")"
echo "| **median** | **$mo $(cat "$WORK/unit")** | **$bo** | | **$mn $(cat "$WORK/unit")** | **$bn** | |"
echo
awk -v o="$mo" -v n="$mn" -v bo="$bo" -v bn="$bn" 'BEGIN {
  printf "new / old: score %.3f (%+.1f %%), bytes %+.0f B/op\n", n / o, (n / o - 1) * 100, bn - bo }'
