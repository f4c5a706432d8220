#!/usr/bin/env bash
# Build, on a machine without a GPU, everything scripts/gpu-check.sh runs on
# a machine with one (which has the NVIDIA driver and compute-sanitizer but
# no package registry), into one folder that is carried over:
#
#   target/gpu-bundle/
#     lib/        the staged runtime and plugins (release), libomp.so.5 of
#                 LLVM 19, and the libomptarget.so.19.1 name clang-19's
#                 programs ask for
#     bin/        offload_check (clang-19, -fopenmp-targets=nvptx64-nvidia-cuda
#                 --offload-arch=sm_90), cubin_vec_add (the Rust API)
#     cubin/      vec_add.cubin (sm_90)
#     gpu-check.sh
#
# It needs clang-19 (apt), pip and network access to PyPI and Debian:
#   * a CUDA root assembled from the PyPI wheels nvidia-cuda-nvcc-cu12
#     (ptxas, libdevice) and nvidia-cuda-nvcc (nvlink, fatbinary), never
#     committed;
#   * LLVM 19's nvptx device runtime and libomp.so.5 from libomp-19-dev /
#     libomp5-19, unpacked with dpkg-deb -x (they conflict with
#     libomp-14-dev, so they are not installed).
# Downloads are cached in target/gpu-build/.
#
# usage: scripts/gpu-build.sh [--arch sm_90]
set -euo pipefail

ARCH=sm_90
if [[ "${1:-}" == "--arch" ]]; then ARCH=$2; fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$ROOT/target/gpu-build
BUNDLE=$ROOT/target/gpu-bundle
CLANG=${CLANG:-clang-19}
mkdir -p "$WORK"

step() { printf '== %s\n' "$*"; }

step "CUDA root from PyPI wheels"
CUDA=$WORK/cuda
if [[ ! -x $CUDA/bin/ptxas || ! -x $CUDA/bin/nvlink ]]; then
  mkdir -p "$WORK/wheels"
  ls "$WORK"/wheels/nvidia_cuda_nvcc_cu12-*.whl >/dev/null 2>&1 ||
    pip download --no-deps --quiet -d "$WORK/wheels" 'nvidia-cuda-nvcc-cu12>=12.4,<13'
  ls "$WORK"/wheels/nvidia_cuda_nvcc-*.whl >/dev/null 2>&1 ||
    pip download --no-deps --quiet -d "$WORK/wheels" nvidia-cuda-nvcc
  rm -rf "$WORK/unpacked" "$CUDA"
  mkdir -p "$WORK/unpacked/cu12" "$WORK/unpacked/cu" "$CUDA/bin" "$CUDA/nvvm"
  (cd "$WORK/unpacked/cu12" && unzip -q "$WORK"/wheels/nvidia_cuda_nvcc_cu12-*.whl)
  (cd "$WORK/unpacked/cu" && unzip -q "$WORK"/wheels/nvidia_cuda_nvcc-*.whl)
  CU12=$WORK/unpacked/cu12/nvidia/cuda_nvcc
  CUN=$(dirname "$(find "$WORK/unpacked/cu" -name nvlink -path '*/bin/*' | head -1)")
  cp "$CU12/bin/ptxas" "$CUDA/bin/"
  cp "$CUN/nvlink" "$CUN/fatbinary" "$CUDA/bin/"
  cp -r "$CU12/nvvm/libdevice" "$CUDA/nvvm/"
  cp -r "$CU12/include" "$CUDA/include"
  version=$(basename "$WORK"/wheels/nvidia_cuda_nvcc_cu12-*.whl | cut -d- -f2)
  echo "CUDA Version $version" >"$CUDA/version.txt"
  chmod +x "$CUDA"/bin/*
fi

step "LLVM 19 device runtime and libomp (libomp-19-dev, unpacked)"
LLVM19=$WORK/llvm19/usr/lib/llvm-19
if [[ ! -f $LLVM19/lib/libomptarget-nvptx-$ARCH.bc ]]; then
  mkdir -p "$WORK/debs"
  (cd "$WORK/debs" && apt-get download libomp-19-dev libomp5-19 2>/dev/null)
  for deb in "$WORK"/debs/*.deb; do dpkg-deb -x "$deb" "$WORK/llvm19"; done
fi

step "runtime and plugins (release)"
(cd "$ROOT" && cargo xtask stage --release >/dev/null)
(cd "$ROOT" && cargo build --release -q -p omptarget-plugin-cuda --example cubin_vec_add)
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/lib" "$BUNDLE/bin" "$BUNDLE/cubin"
cp -L "$ROOT"/target/omptarget/lib/*.so "$BUNDLE/lib/"
cp -L "$LLVM19"/lib/libomp.so.5 "$BUNDLE/lib/"
# clang-19's programs need libomptarget.so.19.1; the releases work stages
# that name; until then it is this runtime under the name.
[[ -e $BUNDLE/lib/libomptarget.so.19.1 ]] || ln -s libomptarget.so "$BUNDLE/lib/libomptarget.so.19.1"
if ! nm -D "$BUNDLE/lib/libomptarget.so" | grep -q ' T __tgt_target_kernel'; then
  echo "note: libomptarget.so lacks __tgt_target_kernel (the clang 19/22 releases work): the OpenMP checks will fail until it lands" >&2
fi
cp "$ROOT/target/release/examples/cubin_vec_add" "$BUNDLE/bin/"

step "programs (clang-19, $ARCH)"
OFFLOAD=(-fopenmp -fopenmp-targets=nvptx64-nvidia-cuda "--offload-arch=$ARCH"
  "--cuda-path=$CUDA" "--libomptarget-nvptx-bc-path=$LLVM19/lib"
  -I"$LLVM19/lib/clang/19/include" -L"$LLVM19/lib" -Wno-unknown-cuda-version)
$CLANG -O2 "${OFFLOAD[@]}" "$ROOT/scripts/gpu/offload_check.c" -o "$BUNDLE/bin/offload_check"
$CLANG -x cuda --cuda-device-only "--offload-arch=$ARCH" -nocudainc -nocudalib \
  "--cuda-path=$CUDA" -Wno-unknown-cuda-version -O2 -c "$ROOT/scripts/gpu/vec_add.cu" \
  -o "$BUNDLE/cubin/vec_add.cubin"
cp "$ROOT/scripts/gpu-check.sh" "$BUNDLE/"

step "done: $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)); on the GPU machine: $BUNDLE/gpu-check.sh"
