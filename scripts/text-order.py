#!/usr/bin/env python3
"""Write the code-layout files the shim and the host plugin link with.

`ffi/program/shim/text-order.txt`, `ffi/plugin/host/rtl/text-order.txt` and
`ffi/plugin/cuda/rtl/text-order.txt` list, one mangled name per line,
every function of the library that typical programs run. A release build places them first and together
(ffi/shared/link/text_order.rs says why: the kernel maps code in 64 KiB windows
around each page touched, so scattered hot code makes the whole library
resident).

The workloads are the comparison's benchmark programs (benches/
llvm_comparison), built with each clang that is installed: `one_region`
(start-up, one region, shutdown) and every op of `offload_overhead`
(allocation, mapping, updates, regions with arguments, threads, the mapping
table at 1k and 100k entries), run on a release staging of ours under
`valgrind --tool=callgrind --demangle=no`.

Usage:
  scripts/text-order.py            rewrite the files (a few minutes)
  scripts/text-order.py --check    how many listed names the release build has
  scripts/text-order.py --check --lib DIR   the same, of the release libraries in DIR
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benches", "llvm_comparison"))
import callgrind_per_op  # noqa: E402  (its reading of callgrind's names)
import compare  # noqa: E402  (build() and reference_lib(): the same binaries)

# (library file staged by xtask, the crate folder that links it)
LIBRARIES = (
    ("libomptarget.so", os.path.join("ffi", "program", "shim")),
    ("libomptarget.rtl.x86_64.so", os.path.join("ffi", "plugin", "host", "rtl")),
    # Without a GPU (as here) this lists what every program runs of it:
    # loading, the driver probe, "no device", unloading.
    ("libomptarget.rtl.cuda.so", os.path.join("ffi", "plugin", "cuda", "rtl")),
)
# Callgrind names a recursive function's inner cycles NAME'2, NAME'3 ...
RECURSION = re.compile(r"'\d+$")
# Below this share of listed names found, --check fails.
CHECK_THRESHOLD = 0.9


def stage_release():
    # The release copy `cargo xtask test` checks (the shim and the host and
    # CUDA plugins built alone): a build of more packages at once (`stage
    # --release`) unifies features differently, and every symbol hash of
    # the crates below changes (a list made from it found 28% in CI's).
    out = subprocess.run(["cargo", "run", "-q", "-p", "xtask", "--", "stage", "--release-copy"],
                         cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout.decode()
    return os.path.abspath(out.strip().splitlines()[-1])


def executed_functions(profile, library):
    """Mangled names of the functions of `library` with a cost in a
    callgrind profile, in the order the profile lists them."""
    objects, functions, seen = {}, {}, {}
    current_object = None
    resolve = callgrind_per_op.resolve_name

    with open(profile) as f:
        for line in f:
            if line.startswith("ob="):
                current_object = resolve(objects, line[3:].strip())
            elif line.startswith("cob="):
                resolve(objects, line[4:].strip())
            elif line.startswith("fn="):
                name = resolve(functions, line[3:].strip())
                if current_object and os.path.basename(current_object) == library:
                    seen.setdefault(RECURSION.sub("", name), None)
            elif line.startswith("cfn="):
                resolve(functions, line[4:].strip())
    # Callgrind's names for code without a symbol ("0x0000...") are no use.
    return [n for n in seen if not n.startswith("0x")]


def workloads():
    """(binary, arguments) of every run, building the programs first."""
    out_dir = os.path.join(ROOT, "target", "bench")
    os.makedirs(out_dir, exist_ok=True)
    runs = []
    for release in ("14", "19", "22"):
        ref = compare.reference_lib(release)
        if ref is None:
            print(f"clang-{release}: skipped (LLVM {release}'s runtime is not here)")
            continue
        bins = compare.build(release, out_dir, ref)
        if bins is None:
            continue
        runs.append((bins["one_region"], []))
        runs.append((bins["offload_overhead"], ["200"]))
    if not runs:
        sys.exit("no clang found to build the workloads with")
    return runs


def write():
    lib = stage_release()
    names = {library: {} for library, _ in LIBRARIES}
    with tempfile.TemporaryDirectory() as tmp:
        # The shim runs its host devices on the built-in host plugin; the
        # library is what a program gets that names it (OMPTARGET_PLUGINS):
        # each workload runs both ways.
        plugin_libraries = ":".join(os.path.join(lib, library)
                                    for library, _ in LIBRARIES[1:])
        runs = [(binary, args, plugins) for binary, args in workloads()
                for plugins in (None, plugin_libraries)]
        for i, (binary, args, plugins) in enumerate(runs):
            profile = os.path.join(tmp, f"cg.{i}")
            how = f" (OMPTARGET_PLUGINS={plugins})" if plugins else ""
            print(f"callgrind: {os.path.basename(binary)} {' '.join(args)}{how}", flush=True)
            env = dict(os.environ, LD_LIBRARY_PATH=lib, OMP_TOOL="disabled")
            if plugins:
                env["OMPTARGET_PLUGINS"] = plugins
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", "--quiet",
                            f"--callgrind-out-file={profile}", binary, *args],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            for library, _ in LIBRARIES:
                for name in executed_functions(profile, library):
                    names[library].setdefault(name, None)
    for library, crate in LIBRARIES:
        if not names[library]:
            sys.exit(f"no function of {library} ran: is it staged in {lib}?")
    for library, crate in LIBRARIES:
        path = os.path.join(ROOT, crate, "text-order.txt")
        with open(path, "w") as f:
            f.writelines(f"{name}\n" for name in names[library])
        print(f"{os.path.relpath(path, ROOT)}: {len(names[library])} functions")


def defined_symbols(path):
    out = subprocess.run(["nm", "--defined-only", path], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def check(lib=None):
    """How many listed names the release build in `lib` has (default: the
    release build, staged now)."""
    lib = lib or stage_release()
    stale = False
    for library, crate in LIBRARIES:
        listed = open(os.path.join(ROOT, crate, "text-order.txt")).read().split()
        present = defined_symbols(os.path.join(lib, library))
        found = sum(name in present for name in listed)
        print(f"{library}: {found} of {len(listed)} listed functions found "
              f"({100 * found // max(len(listed), 1)}%)")
        stale |= found < CHECK_THRESHOLD * len(listed)
    if stale:
        sys.exit(f"below {CHECK_THRESHOLD:.0%}: rerun scripts/text-order.py to rewrite the lists")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help="only report how many listed names the release build has")
    p.add_argument("--lib", help="with --check: the folder of an existing release build's "
                                 "libraries (cargo xtask test's release copy), instead of staging one")
    args = p.parse_args()
    if args.check:
        check(args.lib)
    else:
        write()


if __name__ == "__main__":
    main()
