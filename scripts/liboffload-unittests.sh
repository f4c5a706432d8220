#!/usr/bin/env bash
# LLVM 22's liboffload API tests (offload/unittests/OffloadAPI, gtest) on
# our library. Each suite is built against LLVM 22's OffloadAPI.h and
# linked against its libLLVMOffload.so, as a user builds, then run with
# the staged target/omptarget/lib (or $OMPTARGET_LIB_DIR) first on
# LD_LIBRARY_PATH, where libLLVMOffload.so.22.1 is ours.
#
# The suite's device code (device_code/*.cpp, GPU kernels written against
# clang's gpuintrin.h) is built for our host devices against our
# gpuintrin.h for host devices (ffi/program/shim/include/host-device), as
# x86_64 shared objects NAME.x86_64.bin. The fixture's loadDeviceBinary
# knows binaries for the AMDGPU and CUDA backends only; the build gives it
# one more case, its only change to LLVM's tests: a device whose platform
# backend is UNKNOWN (our x86_64 plugin's) loads NAME.x86_64.bin.
#
# Every test must pass on every device, except those
# tests/liboffload/expected-failures.txt lists, each with why (those it
# marks `hangs` are not run); a listed test that passes fails the run too,
# so the list only shrinks. Prints each suite's counts and the tests that
# failed.
#
# Needs: the suite's sources (`cargo xtask deps` unpacks them into
# target/omptarget/llvm-sources/llvm-22), `llvm-22-dev` and
# `libgtest-dev` (LLVM's support library, which the fixtures use, and
# gtest), and `cargo xtask stage`. The workspace's tests run it
# (tests/system/liboffload_api.rs).
#
# Usage: scripts/liboffload-unittests.sh [LLVM_SOURCE_DIR [SUITE...]]
#   LLVM_SOURCE_DIR holds offload/unittests/OffloadAPI (default: the
#   unpacked one); naming suites runs only those, and then only reports.
#   suites: device platform memory queue event init program kernel symbol
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
src=${1:-$target/omptarget/llvm-sources/llvm-22}
[ $# -eq 0 ] || shift
suites=("$@")
compare=1
if [ ${#suites[@]} -eq 0 ]; then
  suites=(device platform memory queue event init program kernel symbol)
else
  compare=0
fi

release=$target/omptarget/llvm-releases/root/usr/lib/llvm-22
ours=${OMPTARGET_LIB_DIR:-$target/omptarget/lib}
tests=$src/offload/unittests/OffloadAPI
out=$target/omptarget/liboffload-unittests
expected=$root/tests/liboffload/expected-failures.txt
[ -f "$tests/common/Environment.cpp" ] || { echo "no $tests/common/Environment.cpp (cargo xtask deps)" >&2; exit 2; }
[ -f "$release/include/offload/OffloadAPI.h" ] || { echo "no LLVM 22 OffloadAPI.h (cargo xtask deps)" >&2; exit 2; }
[ -f "$ours/libLLVMOffload.so.22.1" ] || { echo "no staged libLLVMOffload.so.22.1 (cargo xtask stage)" >&2; exit 2; }
[ -d /usr/lib/llvm-22/include/llvm ] || { echo "no LLVM 22 headers (apt-get install llvm-22-dev)" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out/device-code"

jobs=$(nproc)
failed_jobs=$out/failed-jobs.txt
: >"$failed_jobs"
# Run "$@" in the background, at most $jobs at once; a failure is written
# down (a job reaped by `wait -n` gives its status to no one else).
throttle() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  { "$@" || echo "$*" >>"$failed_jobs"; } &
}
# Wait for every background job; fail if one failed.
wait_all() {
  wait
  if [ -s "$failed_jobs" ]; then
    echo "failed:" >&2
    sed 's/^/  /' "$failed_jobs" >&2
    return 1
  fi
}

# The device code, for host devices.
for source in "$tests"/device_code/*.cpp; do
  name=$(basename "$source" .cpp)
  throttle clang++-22 -std=c++17 -O2 -shared -fPIC \
    -I "$root/ffi/program/shim/include/host-device" \
    "$source" -o "$out/device-code/$name.x86_64.bin"
done

# The fixture, with the x86_64 case (the only change).
sed 's|} else if (Backend == OL_PLATFORM_BACKEND_CUDA) {|} else if (Backend == OL_PLATFORM_BACKEND_UNKNOWN) {\n    FileExtension = ".x86_64.bin";\n  } else if (Backend == OL_PLATFORM_BACKEND_CUDA) {|' \
  "$tests/common/Environment.cpp" >"$out/Environment.cpp"
grep -q 'x86_64.bin' "$out/Environment.cpp" || { echo "the fixture's loadDeviceBinary changed: no place for the x86_64 case" >&2; exit 2; }
cxxflags=(-std=c++17 -O0 -w -I "$tests/common" -I "$release/include/offload" -I /usr/lib/llvm-22/include)
throttle clang++-22 "${cxxflags[@]}" -DDEVICE_CODE_PATH="\"$out/device-code\"" \
  -c "$out/Environment.cpp" -o "$out/Environment.o"
# The init suite calls olInit itself (LLVM's CMake sets this).
throttle clang++-22 "${cxxflags[@]}" -DDISABLE_WRAPPER -DDEVICE_CODE_PATH="\"$out/device-code\"" \
  -c "$out/Environment.cpp" -o "$out/Environment-init.o"
for suite in "${suites[@]}"; do
  for source in "$tests/$suite"/*.cpp; do
    throttle clang++-22 "${cxxflags[@]}" -c "$source" -o "$out/$suite-$(basename "$source" .cpp).o"
  done
done
wait_all

# The tests that would wait forever, as a gtest filter of tests not run.
not_run=$(awk '!/^ *(#|$)/ && $2 == "hangs" {printf "%s*%s*", sep, $1; sep = ":"}' "$expected")
# Linked against LLVM's library, as a user links; run on ours.
run_suite() {
  local suite=$1 env_o=$out/Environment.o status=0
  [ "$suite" = init ] && env_o=$out/Environment-init.o
  clang++-22 "$env_o" "$out/$suite"-*.o -o "$out/$suite.unittests" \
    -L /usr/lib/llvm-22/lib -lLLVM -lgtest -lgtest_main -lpthread \
    -L "$release/lib" -lLLVMOffload -Wl,-rpath,/usr/lib/llvm-22/lib
  LD_LIBRARY_PATH=$ours timeout 600 "$out/$suite.unittests" ${not_run:+"--gtest_filter=-$not_run"} \
    >"$out/$suite.log" 2>&1 || status=$?
  echo "$status" >"$out/$suite.status"
}
for suite in "${suites[@]}"; do throttle run_suite "$suite"; done
wait_all

failed_all=$out/failed.txt
: >"$failed_all"
broken=0
for suite in "${suites[@]}"; do
  log=$out/$suite.log
  status=$(cat "$out/$suite.status")
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$log")
  failed=$(sed -n 's/^ *\([0-9]*\) FAILED TESTS\?$/\1/p' "$log")
  echo "$suite: ${passed:-0} passed, ${failed:-0} failed"
  # gtest ends with its summary, and with status 1 when a test failed; no
  # summary or another status is a suite that crashed or hung.
  if [ -z "$passed" ] || { [ "$status" != 0 ] && [ "$status" != 1 ]; }; then
    echo "  $suite did not finish (status $status); the end of $log:" >&2
    tail -20 "$log" >&2
    broken=1
  fi
  # The summary's list (gtest prints each failure twice: when it happens
  # and in the summary), one line per test, with the devices it failed on.
  # A test of a device fixture is named Suite.Test/Device; a plain one
  # Suite.Test.
  sed -n '/tests\?, listed below:$/,$p' "$log" \
    | sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)\([/ ].*\)\?$/\1/p' >"$out/$suite.failed"
  sort "$out/$suite.failed" | uniq -c | sed 's/^/    /'
  cat "$out/$suite.failed" >>"$failed_all"
done
[ "$broken" = 0 ] || exit 1
[ "$compare" = 1 ] || exit 0

sort -u "$failed_all" -o "$failed_all"
awk '!/^ *(#|$)/ && $2 != "hangs" {print $1}' "$expected" | sort -u >"$out/expected.txt"
unexpected=$(comm -23 "$failed_all" "$out/expected.txt")
fixed=$(comm -13 "$failed_all" "$out/expected.txt")
echo "$(wc -l <"$failed_all") tests fail on some device; $(wc -l <"$out/expected.txt") are listed as failing in $expected, $(awk '!/^ *(#|$)/ && $2 == "hangs"' "$expected" | wc -l) as not run"
if [ -n "$unexpected" ]; then
  echo "failed and not listed:" >&2
  echo "$unexpected" | sed 's/^/  /' >&2
fi
if [ -n "$fixed" ]; then
  echo "listed but passed on every device (take the line off):" >&2
  echo "$fixed" | sed 's/^/  /' >&2
fi
[ -z "$unexpected" ] && [ -z "$fixed" ]
