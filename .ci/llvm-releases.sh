#!/usr/bin/env bash
# Unpack LLVM 19's and LLVM 22's OpenMP runtimes into a private folder: the
# references the differential suite runs clang-19 and clang-22 programs on.
#
# libomp-19-dev and libomp-22-dev conflict with libomp-14-dev (the clang-14
# reference, installed system-wide), so they are never installed: their
# packages are fetched with `apt-get download` and unpacked with
# `dpkg-deb -x` under DEST/root (usr/lib/llvm-19/lib, usr/lib/llvm-22/lib,
# and usr/lib/x86_64-linux-gnu for the libomp.so.5 that LLVM 22's links to).
# Their shared dependencies (libllvm19, libllvm22) come with clang-19/22.
#
# Usage: .ci/llvm-releases.sh DEST   (run by `cargo xtask deps`; idempotent:
# a stamp naming the unpacked package versions makes a rerun a no-op).
set -euo pipefail

dest=${1:?usage: llvm-releases.sh DEST}
packages=(libomp-19-dev libomp5-19 libomp-22-dev liboffload-22 liboffload-22-dev)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

candidates() {
  for p in "${packages[@]}"; do
    v=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
    echo "$p=$v"
  done
}

wanted=$(candidates)
if grep -q '=$\|=(none)' <<<"$wanted"; then
  # Package lists not fetched yet (a fresh machine): fetch them once.
  $sudo apt-get update -q
  wanted=$(candidates)
fi
if grep -q '=$\|=(none)' <<<"$wanted"; then
  echo "llvm-releases: apt knows no candidate for: $(grep '=$\|=(none)' <<<"$wanted" | tr '\n' ' ')" >&2
  exit 1
fi

stamp="$dest/unpacked.txt"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] \
  && [ -e "$dest/root/usr/lib/llvm-19/lib/libomptarget.so.19.1" ] \
  && [ -e "$dest/root/usr/lib/llvm-22/lib/libomptarget.so.22.1" ]; then
  echo "llvm-releases: LLVM 19 and 22 runtimes already unpacked in $dest"
  exit 0
fi

debs="$dest/debs"
rm -rf "$dest/root" "$debs"
mkdir -p "$debs" "$dest/root"
# apt-get download writes into the current directory; `_apt` may not be able
# to write there, in which case apt downloads as root (a warning, not an error).
(cd "$debs" && apt-get download -q $wanted)
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$dest/root"
done
rm -rf "$debs"

for v in 19 22; do
  lib="$dest/root/usr/lib/llvm-$v/lib"
  for f in "libomptarget.so.$v.1" libomp.so.5 libomptarget.so "clang/$v/include/omp.h"; do
    if [ ! -e "$lib/$f" ]; then
      echo "llvm-releases: $lib/$f is missing after unpacking" >&2
      exit 1
    fi
  done
done
echo "$wanted" >"$stamp"
echo "llvm-releases: unpacked $(tr '\n' ' ' <<<"$wanted")into $dest/root"
