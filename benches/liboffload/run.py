#!/usr/bin/env python3
"""ol* against OpenMP offload on the same host device of our runtime.

Builds benches/liboffload/ol_vs_openmp.c with clang-22 against LLVM 22's
OpenMP runtime and liboffload (as a user builds), and the empty kernel it
launches, then runs it with our library first on LD_LIBRARY_PATH: one
process, one runtime, both front ends. Prints each row's median over
--runs runs: ns per operation on each path and ol*/OpenMP.

  python3 benches/liboffload/run.py [--lib DIR] [--runs 5] [--iters 20000]
  python3 benches/liboffload/run.py --quick   (CI: results checked, no time asserted)

--lib: our library folder (default target/omptarget/lib-release, the
release copy `cargo xtask stage` makes, else target/omptarget/lib).
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
LLVM22 = os.path.join(TARGET, "omptarget/llvm-releases/root/usr/lib/llvm-22")


def default_lib():
    for name in ("lib-release", "lib"):
        path = os.path.join(TARGET, "omptarget", name)
        if os.path.exists(os.path.join(path, "libLLVMOffload.so.22.1")):
            return path
    sys.exit("no staged library with libLLVMOffload.so.22.1: run cargo xtask stage")


def build(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    program = os.path.join(out_dir, "ol_vs_openmp")
    kernel = os.path.join(out_dir, "empty_kernel.so")
    # LLVM 22's omp.h (Debian's libomp-22-dev, unpacked beside its runtime).
    omp_h = glob.glob(os.path.join(LLVM22, "lib/clang/*/include/omp.h"))
    if not omp_h:
        sys.exit(f"no LLVM 22 omp.h under {LLVM22}: run cargo xtask deps")
    subprocess.run(["clang-22", "-O2", "-fopenmp", "-fopenmp-targets=x86_64-unknown-linux-gnu",
                    "-I", os.path.dirname(omp_h[0]), "-I", os.path.join(LLVM22, "include"),
                    "-I", os.path.join(ROOT, "ffi/program/shim/tests/c"), os.path.join(HERE, "ol_vs_openmp.c"),
                    "-o", program, "-L", os.path.join(LLVM22, "lib"), "-lLLVMOffload"], check=True)
    subprocess.run(["clang-22", "-O2", "-shared", "-fPIC", os.path.join(HERE, "empty_kernel.c"),
                    "-o", kernel], check=True)
    return program, kernel


def run_once(program, kernel, lib, iters):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = f"{lib}:{os.path.join(LLVM22, 'lib')}"
    out = subprocess.run([program, kernel, str(iters)], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0 or "FAILED" in out.stdout:
        sys.exit(f"ol_vs_openmp failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    rows = {}
    for line in out.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name != "device":
            rows[name] = float(value)
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--iters", type=int, default=20000)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    if args.quick:
        args.runs, args.iters = 1, 200
    lib = args.lib or default_lib()
    program, kernel = build(os.path.join(TARGET, "bench", "liboffload"))
    runs = [run_once(program, kernel, lib, args.iters) for _ in range(args.runs)]
    print(f"ol* against OpenMP on one host device, {lib}: median of {args.runs} runs "
          f"of {args.iters} operations a batch")
    print(f"| operation | OpenMP ns | ol* ns | ol*/OpenMP |")
    print("|---|---|---|---|")
    for row in ("launch_empty", "alloc_free_64B", "copy_64B_queued"):
        omp = statistics.median(r[f"openmp_{row}"] for r in runs)
        ol = statistics.median(r[f"ol_{row}"] for r in runs)
        ratio = statistics.median(r[f"ol_vs_openmp_{row}"] for r in runs)
        print(f"| {row} | {omp:.0f} | {ol:.0f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
