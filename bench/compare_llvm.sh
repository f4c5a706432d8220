#!/usr/bin/env bash
# Compare the per-operation overhead and peak memory of LLVM 14's
# libomptarget and ours on the same clang-14 offload binary
# (bench/offload_overhead.c), in one run.
#
# Usage: bench/compare_llvm.sh            (from anywhere in the repository)
#   ROUNDS=5      runs of the binary on each runtime, alternating
#   ITERS=20000   iterations of each operation per run
#   OUT_DIR=target/bench   where the binary and the raw outputs go
#   SKIP_STAGE=1  use the libraries already staged (no cargo build)
#
# Prints a table: op, LLVM ns/op, ours ns/op (medians over the rounds), and
# LLVM/ours (> 1: we are faster); then peak RSS from /usr/bin/time -v (or,
# without it, the program's own getrusage figure).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-20000}
OUT_DIR=${OUT_DIR:-$ROOT/target/bench}
LLVM_LIB=/usr/lib/llvm-14/lib
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)

BIN=$OUT_DIR/offload_overhead
clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
  "$ROOT/bench/offload_overhead.c" -o "$BIN"

if [[ ${SKIP_STAGE:-0} != 1 ]]; then
  # Release build of the shim and plugins, copied to target/omptarget/lib.
  OURS_LIB=$(cd "$ROOT" && cargo run -q -p xtask -- stage --release | tail -n 1)
else
  OURS_LIB=${CARGO_TARGET_DIR:-$ROOT/target}/omptarget/lib
fi
OURS_LIB=$(cd "$OURS_LIB" && pwd)
[[ -f $OURS_LIB/libomptarget.so ]] || { echo "no libomptarget.so in $OURS_LIB" >&2; exit 1; }

TIME_V=""
if /usr/bin/time -v true >/dev/null 2>&1; then TIME_V=/usr/bin/time; fi

# run <label> <lib dir> <round>: one run; output in $OUT_DIR/<label>.<round>.
run() {
  local label=$1 lib=$2 round=$3 out=$OUT_DIR/$1.$3
  if [[ -n $TIME_V ]]; then
    LD_LIBRARY_PATH=$lib "$TIME_V" -v -o "$out.time" "$BIN" "$ITERS" >"$out.txt"
    awk -F': ' '/Maximum resident set size/ {print "time_v_peak_rss_kb", $2}' \
      "$out.time" >>"$out.txt"
  else
    LD_LIBRARY_PATH=$lib "$BIN" "$ITERS" >"$out.txt"
  fi
  # The run must have used the library we meant, and passed its checks.
  local used
  used=$(awk '$1 == "runtime" {print $2}' "$out.txt")
  if [[ $used != "$lib/libomptarget.so" ]]; then
    echo "$label round $round loaded '$used', expected $lib/libomptarget.so" >&2
    exit 1
  fi
  if grep -q '^FAILED' "$out.txt"; then
    echo "$label round $round: $(grep '^FAILED' "$out.txt")" >&2
    exit 1
  fi
}

rm -f "$OUT_DIR"/llvm.*.txt "$OUT_DIR"/ours.*.txt
for round in $(seq 1 "$ROUNDS"); do
  # Alternate, so that drift in the machine's load hits both alike.
  if ((round % 2)); then
    run llvm "$LLVM_LIB" "$round"; run ours "$OURS_LIB" "$round"
  else
    run ours "$OURS_LIB" "$round"; run llvm "$LLVM_LIB" "$round"
  fi
done

# median <label> <key>: median over the rounds of the value on line <key>.
median() {
  cat "$OUT_DIR/$1".*.txt | awk -v k="$2" '$1 == k {print $2}' | sort -g |
    awk '{v[NR] = $1} END {
      if (NR == 0) { print "n/a"; exit }
      if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "offload_overhead: $ROUNDS rounds x $ITERS iterations; medians"
echo "LLVM: $LLVM_LIB   ours: $OURS_LIB"
printf '%-30s %12s %12s %8s\n' op "LLVM ns/op" "ours ns/op" LLVM/ours
OPS=$(awk '$1 != "runtime" && $1 !~ /peak_rss_kb$/ {print $1}' "$OUT_DIR/llvm.1.txt")
for op in $OPS; do
  l=$(median llvm "$op")
  o=$(median ours "$op")
  printf '%-30s %12s %12s %8s\n' "$op" "$l" "$o" \
    "$(awk -v l="$l" -v o="$o" 'BEGIN { if (o > 0) printf "%.2f", l / o; else print "n/a" }')"
done
if [[ -n $TIME_V ]]; then rss=time_v_peak_rss_kb; src="/usr/bin/time -v"; else
  rss=peak_rss_kb; src="getrusage"; fi
printf '%-30s %12s %12s %8s\n' "peak RSS KiB ($src)" "$(median llvm $rss)" "$(median ours $rss)" \
  "$(awk -v l="$(median llvm $rss)" -v o="$(median ours $rss)" 'BEGIN { printf "%.2f", l / o }')"
echo "raw outputs: $OUT_DIR/{llvm,ours}.<round>.txt"
