#!/usr/bin/env bash
# LLVM 22's liboffload API tests (offload/unittests/OffloadAPI, gtest) on
# our library: each suite built against LLVM 22's OffloadAPI.h (unpacked
# by `cargo xtask deps`) and run with the staged target/omptarget/lib
# first on LD_LIBRARY_PATH, where libLLVMOffload.so.22.1 is ours. Prints
# each suite's passed and failed counts and the names of the tests that
# failed, grouped (docs/liboffload.md says why each group fails).
#
# Needs: the suite's sources (LLVM 22's source tarball: pass the folder
# that holds offload/unittests/OffloadAPI), `apt-get install llvm-22-dev
# libgtest-dev` (LLVM's support headers and library, which the suite's
# fixtures use, and gtest), and `cargo xtask stage`.
#
# Usage: scripts/liboffload-unittests.sh LLVM_SOURCE_DIR [SUITE...]
#   suites: device platform memory queue event init program kernel symbol
set -euo pipefail

src=${1:?usage: liboffload-unittests.sh LLVM_SOURCE_DIR [SUITE...]}
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(device platform memory queue event init program kernel symbol)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
release=$target/omptarget/llvm-releases/root/usr/lib/llvm-22
ours=$target/omptarget/lib
tests=$src/offload/unittests/OffloadAPI
out=$target/omptarget/liboffload-unittests
mkdir -p "$out"
[ -f "$tests/common/Environment.cpp" ] || { echo "no $tests/common/Environment.cpp" >&2; exit 2; }
[ -f "$release/include/offload/OffloadAPI.h" ] || { echo "run cargo xtask deps" >&2; exit 2; }
[ -f "$ours/libLLVMOffload.so.22.1" ] || { echo "run cargo xtask stage" >&2; exit 2; }

for suite in "${suites[@]}"; do
  flags=()
  # The init suite calls olInit itself (LLVM's CMake sets this).
  [ "$suite" = init ] && flags+=(-DDISABLE_WRAPPER)
  # Linked against LLVM's library, as a user builds; run on ours.
  clang++-22 -std=c++17 -O0 -w "${flags[@]}" -I "$tests/common" \
    -I "$release/include/offload" -I /usr/lib/llvm-22/include \
    -DDEVICE_CODE_PATH="\"$out/device-code\"" \
    "$tests/common/Environment.cpp" "$tests/$suite"/*.cpp \
    -o "$out/$suite.unittests" -L /usr/lib/llvm-22/lib -lLLVM \
    -lgtest -lgtest_main -lpthread -L "$release/lib" -lLLVMOffload \
    -Wl,-rpath,/usr/lib/llvm-22/lib
  log=$out/$suite.log
  LD_LIBRARY_PATH=$ours timeout 600 "$out/$suite.unittests" >"$log" 2>&1 || true
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$log")
  failed=$(sed -n 's/^ *\([0-9]*\) FAILED TESTS\?$/\1/p' "$log")
  echo "$suite: ${passed:-0} passed, ${failed:-0} failed"
  # The summary's list (gtest prints each failure twice: when it happens
  # and in the summary), one line per test and device.
  sed -n '/tests\?, listed below:$/,$p' "$log" \
    | sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)\/.*/\1/p' \
    | sort | uniq -c | sed 's/^/    /'
done
