#!/usr/bin/env bash
# Compare the per-operation overhead and peak memory of LLVM 14's
# libomptarget and ours on the same clang-14 offload binary
# (benches/llvm_comparison/offload_overhead.c), in one run.
#
# Usage: benches/llvm_comparison/compare_llvm.sh            (from anywhere in the repository)
#   ROUNDS=5      runs of the binary on each runtime, alternating
#   ITERS=20000   iterations of each operation per run
#   OUT_DIR=target/bench   where the binary and the raw outputs go
#   SKIP_STAGE=1  use the libraries already staged (no cargo build)
#   MODES="single multi"   process modes measured (see below)
#
# Modes: "single" runs the program as it is (one thread ever: glibc then
# skips the atomics of pthread mutexes and malloc, which favours LLVM's
# C++ runtime); "multi" sets OO_MULTITHREADED=1 so that the program starts
# and joins one thread first, as any program that ran `omp parallel` has.
#
# Prints a table: op, LLVM ns/op, ours ns/op (medians over the rounds), and
# LLVM/ours (> 1: we are faster); then peak RSS from /usr/bin/time -v (or,
# without it, the program's own getrusage figure).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${ROUNDS:-5}
MODES=${MODES:-single multi}
ITERS=${ITERS:-20000}
OUT_DIR=${OUT_DIR:-$ROOT/target/bench}
LLVM_LIB=/usr/lib/llvm-14/lib
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)

BIN=$OUT_DIR/offload_overhead
clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
  "$ROOT/benches/llvm_comparison/offload_overhead.c" -o "$BIN"

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

# run <label> <lib dir> <round> <mode>: one run; output in
# $OUT_DIR/<label>.<mode>.<round>.txt.
run() {
  local label=$1 lib=$2 round=$3 mode=$4 out=$OUT_DIR/$1.$4.$3 mt=0
  [[ $mode == multi ]] && mt=1
  if [[ -n $TIME_V ]]; then
    OO_MULTITHREADED=$mt LD_LIBRARY_PATH=$lib "$TIME_V" -v -o "$out.time" "$BIN" "$ITERS" >"$out.txt"
    awk -F': ' '/Maximum resident set size/ {print "time_v_peak_rss_kb", $2}' \
      "$out.time" >>"$out.txt"
  else
    OO_MULTITHREADED=$mt LD_LIBRARY_PATH=$lib "$BIN" "$ITERS" >"$out.txt"
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

rm -f "$OUT_DIR"/llvm.*.txt "$OUT_DIR"/ours.*.txt "$OUT_DIR"/*.time
for round in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    # Alternate, so that drift in the machine's load hits both alike.
    if ((round % 2)); then
      run llvm "$LLVM_LIB" "$round" "$mode"; run ours "$OURS_LIB" "$round" "$mode"
    else
      run ours "$OURS_LIB" "$round" "$mode"; run llvm "$LLVM_LIB" "$round" "$mode"
    fi
  done
done

# median <label>.<mode> <key>: median over the rounds of line <key>.
median() {
  cat "$OUT_DIR/$1".*.txt | awk -v k="$2" '$1 == k {print $2}' | sort -g |
    awk '{v[NR] = $1} END {
      if (NR == 0) { print "n/a"; exit }
      if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.1f\n", m }'
}

ratio() { awk -v l="$1" -v o="$2" 'BEGIN { if (o > 0) printf "%.2f", l / o; else print "n/a" }'; }

if [[ -n $TIME_V ]]; then rss=time_v_peak_rss_kb; src="/usr/bin/time -v"; else
  rss=peak_rss_kb; src="getrusage"; fi
echo "offload_overhead: $ROUNDS rounds x $ITERS iterations; medians"
echo "LLVM: $LLVM_LIB   ours: $OURS_LIB"
for mode in $MODES; do
  echo
  echo "mode: $mode-threaded process"
  printf '%-30s %12s %12s %9s\n' op "LLVM ns/op" "ours ns/op" LLVM/ours
  ops=$(awk '$1 != "runtime" && $1 != "multithreaded" && $1 !~ /peak_rss_kb$/ {print $1}' \
    "$OUT_DIR/llvm.$mode.1.txt")
  for op in $ops; do
    l=$(median "llvm.$mode" "$op")
    o=$(median "ours.$mode" "$op")
    printf '%-30s %12s %12s %9s\n' "$op" "$l" "$o" "$(ratio "$l" "$o")"
  done
  l=$(median "llvm.$mode" $rss)
  o=$(median "ours.$mode" $rss)
  printf '%-30s %12s %12s %9s\n' "peak RSS KiB ($src)" "$l" "$o" "$(ratio "$l" "$o")"
done
echo
echo "raw outputs: $OUT_DIR/{llvm,ours}.<mode>.<round>.txt"
