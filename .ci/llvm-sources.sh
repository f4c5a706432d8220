#!/usr/bin/env bash
# Unpack the lit suites of LLVM 14, 19 and 22 (LLVM's own offload tests)
# from Debian's source packages: `openmp/libomptarget/test` of
# llvm-toolchain-14, `offload/test` of llvm-toolchain-19 and -22, into
# DEST/llvm-NN/<that path>. scripts/llvm-lit.py runs them on each release's
# runtime and on ours. From llvm-toolchain-22 also its liboffload API
# tests, `offload/unittests/OffloadAPI` (scripts/liboffload-unittests.sh).
#
# Needs deb-src entries for bookworm (main, updates, security): added as
# /etc/apt/sources.list.d/omptarget-src.sources when apt knows no source
# package. A release whose source cannot be fetched is reported and
# skipped (the script still exits 0 if any suite is unpacked).
#
# Usage: .ci/llvm-sources.sh DEST [14 19 22]   (idempotent: a stamp per
# release names the source version unpacked).
set -euo pipefail

dest=${1:?usage: llvm-sources.sh DEST [MAJOR...]}
shift
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(14 19 22)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

version_of() {
  # awk reads to the end: an early `exit` would kill apt-cache with SIGPIPE,
  # which `pipefail` turns into a failure (status 141).
  apt-cache showsrc "llvm-toolchain-$1" 2>/dev/null | awk '/^Version:/ && !v {v = $2} END {print v}'
}

if [ -z "$(version_of 19)" ]; then
  $sudo tee /etc/apt/sources.list.d/omptarget-src.sources >/dev/null <<'EOF'
# Added by omptarget-rs's .ci/llvm-sources.sh: LLVM's lit suites come from
# the source packages.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  $sudo apt-get update -q
fi

# The orig tarball of llvm-toolchain-MAJOR from deb.debian.org's main pool,
# checked against the SHA-256 in apt's source index, into DIR.
fetch_orig_from_pool() {
  local major=$1 dir=$2 line sum name
  line=$(apt-cache showsrc "llvm-toolchain-$major" \
    | awk '/^Checksums-Sha256:/ {on = 1; next} /^[^ ]/ {on = 0} on && !found && $3 ~ /\.orig\.tar\.xz$/ {found = $1 " " $3} END {print found}')
  [ -n "$line" ] || return 1
  sum=${line%% *}
  name=${line#* }
  echo "llvm-sources: fetching $name from the main archive's pool" >&2
  curl -fsSL --retry 3 -o "$dir/$name" \
    "http://deb.debian.org/debian/pool/main/l/llvm-toolchain-$major/$name" || return 1
  echo "$sum  $dir/$name" | sha256sum --check --quiet - || return 1
}

mkdir -p "$dest"

# One release: fetch its source tarball and unpack its suite; 0 when the
# suite is there.
unpack_one() {
  local major=$1 sub version out stamp work unit="" unit_file=""
  case "$major" in
    14) sub=openmp/libomptarget/test ;;
    19) sub=offload/test ;;
    # 22's liboffload API tests too (scripts/liboffload-unittests.sh).
    22) sub=offload/test unit=offload/unittests/OffloadAPI unit_file=common/Environment.cpp ;;
    *) echo "llvm-sources: no suite known for LLVM $major" >&2; return 2 ;;
  esac
  version=$(version_of "$major")
  out="$dest/llvm-$major"
  stamp="$out/unpacked.txt"
  if [ -n "$version" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ] \
    && [ -f "$out/$sub/lit.cfg" ] && { [ -z "$unit" ] || [ -f "$out/$unit/$unit_file" ]; }; then
    echo "llvm-sources: LLVM $major's lit suite ($version) already in $out"
    return 0
  fi
  if [ -z "$version" ]; then
    echo "llvm-sources: apt knows no source of llvm-toolchain-$major: LLVM $major's suite is skipped" >&2
    return 1
  fi
  work="$dest/download-$major"
  rm -rf "$work" "$out"
  mkdir -p "$work" "$out"
  if ! (cd "$work" && apt-get source --download-only -q "llvm-toolchain-$major" >/dev/null 2>&1); then
    # The security archive has held 22's binaries without its source
    # (404); the same upstream tarball is in the main archive's pool. It
    # is accepted only with the SHA-256 apt's source index records for it.
    if ! fetch_orig_from_pool "$major" "$work"; then
      echo "llvm-sources: llvm-toolchain-$major $version could not be fetched: LLVM $major's suite is skipped" >&2
      rm -rf "$work"
      return 1
    fi
  fi
  # Only the suites (and nothing else of the ~1.5 GB tree) are written.
  local wanted=("*/$sub/*")
  [ -z "$unit" ] || wanted+=("*/$unit/*")
  tar -xJf "$work"/llvm-toolchain-"$major"_*.orig.tar.xz -C "$out" \
    --strip-components=1 --wildcards "${wanted[@]}"
  rm -rf "$work"
  echo "$version" >"$stamp"
  echo "llvm-sources: LLVM $major's lit suite ($version) unpacked in $out/$sub"
}

# The releases at once: each is a download, then an xz decompression of
# the whole tarball on one core (one after the other: 30 s of a fresh
# clone's `cargo xtask deps`).
pids=()
for major in "${majors[@]}"; do
  unpack_one "$major" &
  pids+=($!)
done
unpacked=0
for pid in "${pids[@]}"; do
  if wait "$pid"; then unpacked=$((unpacked + 1)); fi
done
[ "$unpacked" -gt 0 ]
