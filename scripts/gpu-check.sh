#!/usr/bin/env bash
# The CUDA plugin on a real GPU: run what scripts/gpu-build.sh built
# (target/gpu-bundle, carried to a machine with one NVIDIA GPU, its driver
# and compute-sanitizer; no package registry is needed) on this runtime,
# compare with the host, and run the same under
#   compute-sanitizer --tool memcheck --leak-check full --error-exitcode 1
# One line per check (PASS/FAIL/SKIP, name, seconds or reason); exit status
# 0 when every check passed. Takes under 8 minutes (GPU_CHECK_TIMEOUT per
# check, default 50 s; GPU_CHECK_BUDGET in all, default 420 s).
#
# usage: gpu-check.sh [BUNDLE]   (default: the folder of this script if it
#                                 holds lib/, else target/gpu-bundle)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [[ -n "${1:-}" ]]; then
  B=$(cd "$1" && pwd)
elif [[ -d $here/lib ]]; then
  B=$here
else
  B=$(cd "$here/.." && pwd)/target/gpu-bundle
fi
LIB=$B/lib
OUT=${GPU_CHECK_OUT:-$(mktemp -d)}
# Each check at most LIMIT seconds, all of them at most BUDGET: the whole
# script stays under 8 minutes even when every check hangs.
LIMIT=${GPU_CHECK_TIMEOUT:-50}
BUDGET=${GPU_CHECK_BUDGET:-420}
failures=0

line() { printf '%-4s  %-52s %s\n' "$1" "$2" "$3"; }

# check NAME COMMAND... : run with the bundle's libraries; PASS on exit 0
# and when the optional predicate $EXPECT (a grep -E pattern on stdout)
# matches. Output goes to $OUT/NAME.{out,err}.
check() {
  local name=$1
  shift
  local file=$OUT/${name//[^A-Za-z0-9_.-]/_}
  local start=$SECONDS
  if ((SECONDS + LIMIT > BUDGET)); then
    line SKIP "$name" "time budget (${BUDGET}s) spent"
    failures=$((failures + 1))
    return 1
  fi
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout "$LIMIT" "$@" >"$file.out" 2>"$file.err"
  local rc=$? took=$((SECONDS - start))
  if [[ $rc -ne 0 ]]; then
    local why="exit $rc"
    [[ $rc -eq 124 ]] && why="timed out after ${LIMIT}s"
    local detail
    detail=$(cat "$file.err" "$file.out" | grep -m1 -iE 'error|fail|wrong|leak|lacks|undefined' | cut -c1-160)
    line FAIL "$name" "$why: ${detail:-see $file.err}"
    failures=$((failures + 1))
    return 1
  fi
  if [[ -n "${EXPECT:-}" ]] && ! grep -qE "$EXPECT" "$file.out"; then
    line FAIL "$name" "output lacks /$EXPECT/ (see $file.out)"
    failures=$((failures + 1))
    return 1
  fi
  line PASS "$name" "(${took}s)"
}

if [[ ! -x $B/bin/offload_check || ! -x $B/bin/cubin_vec_add ]]; then
  line FAIL "bundle" "$B lacks bin/: run scripts/gpu-build.sh first"
  exit 1
fi
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
SANITIZE=("$SAN" --tool memcheck --leak-check full --error-exitcode 1)

# The driver and the GPU.
if gpu=$(nvidia-smi -L 2>/dev/null | head -1) && [[ -n $gpu ]]; then
  line INFO "gpu" "$gpu"
else
  line FAIL "gpu" "nvidia-smi lists no GPU"
  failures=$((failures + 1))
fi

# 1. The Rust API on a cubin, blocking and on a stream, against the host.
EXPECT=' 0 wrong' check "rust api: cubin vec_add vs host" \
  "$B/bin/cubin_vec_add" "$LIB" "$B/cubin/vec_add.cubin"

# 2. A clang-19 OpenMP program on the GPU, then on the host (fallback);
#    the printed values must be the same.
EXPECT='^# ran on the initial device: 0' check "openmp: offload_check on the gpu" \
  "$B/bin/offload_check"
OMP_TARGET_OFFLOAD=DISABLED EXPECT='^# ran on the initial device: 1' \
  check "openmp: offload_check on the host" "$B/bin/offload_check"
gpu_out=$OUT/openmp__offload_check_on_the_gpu.out
host_out=$OUT/openmp__offload_check_on_the_host.out
if [[ -s $gpu_out && -s $host_out ]] && diff <(grep -v '^#' "$gpu_out") <(grep -v '^#' "$host_out") >"$OUT/diff.txt"; then
  line PASS "openmp: gpu results == host results" "($(grep -vc '^#' "$gpu_out") lines)"
else
  line FAIL "openmp: gpu results == host results" "see $OUT/diff.txt"
  failures=$((failures + 1))
fi

# 3. The seed scenario: exit() with device memory and a mapping live; the
#    shutdown report must show the device torn down.
OMPTARGET_SHUTDOWN_REPORT=$OUT/seed-report.txt EXPECT='leaving' \
  check "seed: exit with live device memory" "$B/bin/offload_check" leak
if grep -qE 'deinit device .*cuda.so\): ok' "$OUT/seed-report.txt" 2>/dev/null; then
  line PASS "seed: report shows the device torn down" ""
else
  line FAIL "seed: report shows the device torn down" "see $OUT/seed-report.txt"
  failures=$((failures + 1))
fi

# 4. The same under compute-sanitizer (memcheck, leak check).
if [[ -z $SAN ]]; then
  line FAIL "compute-sanitizer" "not found"
  failures=$((failures + 1))
else
  EXPECT=' 0 wrong' check "sanitizer: rust api cubin vec_add" \
    "${SANITIZE[@]}" "$B/bin/cubin_vec_add" "$LIB" "$B/cubin/vec_add.cubin"
  EXPECT='^# ran on the initial device: 0' check "sanitizer: openmp offload_check" \
    "${SANITIZE[@]}" "$B/bin/offload_check"
  EXPECT='leaving' check "sanitizer: seed, exit with live device memory" \
    "${SANITIZE[@]}" "$B/bin/offload_check" leak
  for f in "$OUT"/sanitizer*.out; do
    if grep -q 'ERROR SUMMARY: [1-9]' "$f"; then
      line FAIL "sanitizer: $(basename "$f" .out)" "$(grep -m1 'ERROR SUMMARY' "$f")"
      failures=$((failures + 1))
    fi
  done
fi

line "----" "$failures failure(s); outputs in $OUT" ""
exit $((failures > 0))
