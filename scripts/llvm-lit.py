#!/usr/bin/env python3
"""LLVM's own offload lit suites, run on a release's runtime and on ours.

For each LLVM release (14, 19, 22) whose test sources are unpacked (by
`.ci/llvm-sources.sh target/omptarget/llvm-sources`), the suite of
that release (`openmp/libomptarget/test` in 14, `offload/test` in 19 and
22) is set up as LLVM's CMake sets it up for host offload to x86_64
(`lit.site.cfg` written here instead of by CMake), compiled by the
release's own clang, and run three times in one go: on the release's
runtime (the reference), on ours (the staged `target/omptarget/lib`) with
the binaries linked as the release links them (`libomptarget.so.19.1`
for a clang-19 binary), and on ours again with the binaries linked
against our library's own name (`-L target/omptarget/lib` first: every
binary then needs the plain `libomptarget.so`, as a user's who links
against an installed omptarget-rs does). A test fails this comparison
when it passes on the reference and not on ours, in either link form.

Needs: `cargo xtask deps` (the compilers, LLVM 19's and 22's runtimes),
`cargo xtask stage` (ours), `apt-get install llvm-14-tools llvm-19-tools
llvm-22-tools` (lit, FileCheck, not) and the sources above.

Usage:
  scripts/llvm-lit.py [--release N ...] [--filter REGEX] [--runtime all|reference|ours|own-name] [-j N]
                      [--known FILE]
  scripts/llvm-lit.py --release 19 --filter mapping/low_alignment.c   (one test)

The lists of tests that pass on each runtime and the differences are
written under `target/omptarget/lit/<release>/`. A test that passes on the
reference and not on ours (in a link form) is run twice more on both; it is a regression
unless both reruns pass on ours (then it is reported as flaky on ours and
does not fail the run) or the reference failed it in a rerun. The exit status is 1 when there is a
regression. With `--known FILE` (`tests/lit/known-regressions.txt`, lines
"RELEASE path", or "RELEASE own-name:path" for the own-name link form only), the regressions listed there are reported but do not
fail the run, a listed test that now passes fails it until its line is
taken off (the list is exact, so it only shrinks), and so does a
reference that passes far fewer tests than measured (MIN_REFERENCE).
"""
import argparse
import functools
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import releases  # noqa: E402  (the one table of the releases' paths)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Cargo's target directory (a relative CARGO_TARGET_DIR is relative to the
# current directory, as for cargo).
TARGET = os.path.abspath(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"))
OMPTARGET = os.path.join(TARGET, "omptarget")


def triple(major):
    """The host offload target as the release's CMake names it (LLVM 22's
    lit.cfg knows x86_64-unknown-linux-gnu, 14's and 19's the -pc- one)."""
    return "x86_64-unknown-linux-gnu" if major >= 22 else "x86_64-pc-linux-gnu"


def all_targets(major):
    """LIBOMPTARGET_ALL_TARGETS as the release's CMake sets it. The tests
    name other targets' substitutions too (`%libomptarget-compile-run-and-
    check-aarch64-unknown-linux-gnu`); lit.cfg turns those of targets other
    than the current one into `echo ignored-command`, and leaves a target it
    does not know as an unknown command (the test then fails everywhere)."""
    if major == 14:
        return ["aarch64-unknown-linux-gnu", "powerpc64-ibm-linux-gnu",
                "powerpc64le-ibm-linux-gnu", "x86_64-pc-linux-gnu",
                "nvptx64-nvidia-cuda", "nvptx64-nvidia-cuda-newRTL",
                "amdgcn-amd-amdhsa", "amdgcn-amd-amdhsa-newRTL"]
    hosts = ["aarch64-unknown-linux-gnu", "powerpc64le-ibm-linux-gnu",
             "powerpc64-ibm-linux-gnu", triple(major), "s390x-ibm-linux-gnu"]
    if major >= 22:
        hosts += ["riscv64-unknown-linux-gnu", "loongarch64-unknown-linux-gnu"]
    targets = ["amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda-JIT-LTO"]
    for t in hosts + ["nvptx64-nvidia-cuda"]:
        targets += [t, t + "-LTO"]
    if major >= 22:
        targets.append("spirv64-intel")
    return targets


@functools.lru_cache(maxsize=None)
def cc_cache_tool():
    """The build cache's compiler wrapper: `xtask lit-cc` (xtask/src/lit_cc.rs),
    the xtask that runs this script (OMPTARGET_XTASK) or one built now."""
    xtask = os.environ.get("OMPTARGET_XTASK")
    if xtask and os.access(xtask, os.X_OK):
        return xtask
    subprocess.run(["cargo", "build", "--quiet", "-p", "xtask"], cwd=ROOT, check=True)
    return os.path.join(TARGET, "debug", "xtask")


def cc_cache_dir(major):
    """Where the release's builds are kept for the runs of one invocation
    (emptied when it starts)."""
    return os.path.join(OMPTARGET, "lit", str(major), "cc-cache")


def release_lib_dir(major):
    """The release's own runtime (tests/releases.tsv)."""
    return releases.lib_dir(major)


def suite_dir(major):
    """Where .ci/llvm-sources.sh unpacked the release's lit suite."""
    return releases.lit_suite_dir(major)


def omp_header_dir(major):
    include = releases.include_dir(major)
    if not os.path.isfile(os.path.join(include, "omp.h")):
        sys.exit(f"no omp.h in {include}: run `cargo xtask deps`")
    return include


def clang_version(major):
    out = subprocess.run([f"clang-{major}", "--version"], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    m = re.search(r"version (\d+)\.(\d+)\.(\d+)", out)
    return m.groups() if m else (str(major), "0", "0")


class Run:
    """One run of a suite: where the binaries find libomptarget when they
    are linked (`link_dir`, the first -L and RUNPATH) and at run time
    (`runtime_dir`, first on LD_LIBRARY_PATH)."""

    def __init__(self, name, runtime_dir, link_dir):
        self.name, self.runtime_dir, self.link_dir = name, runtime_dir, link_dir


def runs(major):
    """The reference, ours linked as the release links (a clang-19 binary
    needs libomptarget.so.19.1), and ours linked against our own folder
    (every binary needs libomptarget.so: the release must come from the
    binary itself)."""
    release = release_lib_dir(major)
    ours = os.path.join(OMPTARGET, "lib")
    return {
        "reference": Run("reference", release, release),
        "ours": Run("ours", ours, release),
        "own-name": Run("own-name", ours, ours),
    }


def write_site_config(major, run, exec_root):
    """The lit.site.cfg CMake would write for host offload to x86_64 and
    the release's own runtime, with `run.link_dir` as the library folder
    the tests link against (libomp, the device runtime and the other
    libraries still from the release) and `run.runtime_dir` first on
    the tests' LD_LIBRARY_PATH (before the binaries' RUNPATH)."""
    tools = f"/usr/lib/llvm-{major}/bin"
    lib = release_lib_dir(major)
    v = clang_version(major)
    features = ["clang", f"clang-{v[0]}", f"clang-{v[0]}.{v[1]}", f"clang-{'.'.join(v)}"]
    values = {
        "bin_llvm_tools_dir": tools,
        # Through the build cache: the reference's and ours-linked-as-the-
        # release's runs build the same binaries (xtask/src/lit_cc.rs).
        "test_c_compiler": f"{cc_cache_tool()} lit-cc /usr/bin/clang-{major}",
        "test_cxx_compiler": f"{cc_cache_tool()} lit-cc /usr/bin/clang++-{major}",
        "test_fortran_compiler": "",
        "test_openmp_flags": "-fopenmp -pthread",
        "test_extra_flags": "",
        "cuda_path": "",
        "cuda_libdir": "",
        "cuda_test_arch": "",
        "amdgpu_test_arch": "",
        "libomptarget_obj_root": exec_root,
        # lit.cfg's first -L and RUNPATH: where libomptarget is linked from.
        "library_dir": run.link_dir,
        "llvm_library_dir": lib,
        "llvm_library_intdir": lib,
        "omp_header_directory": omp_header_dir(major),
        "omp_host_rtl_directory": lib,
        "llvm_lib_directory": lib,
        "operating_system": "Linux",
        "libomptarget_current_target": triple(major),
        "libomptarget_filecheck": os.path.join(tools, "FileCheck"),
        "libomptarget_not": os.path.join(tools, "not"),
    }
    lines = ["# Written by scripts/llvm-lit.py (what CMake's lit.site.cfg.in holds)."]
    for key, value in values.items():
        lines.append(f"config.{key} = {value!r}")
    lines.append(f"config.test_compiler_features = {features!r}")
    lines.append(f"config.libomptarget_all_targets = {all_targets(major)!r}")
    lines.append("config.libomptarget_debug = False")
    lines.append("config.has_libomptarget_ompt = True")
    lines.append("config.libomptarget_has_libc = False")
    # LLVM 22's lit.site.cfg.in adds these (no GPU PGO; the device-info
    # tool and tblgen are only for tests this host target does not run).
    lines.append("config.libomptarget_test_pgo = False")
    lines.append("config.offload_device_info = ''")
    lines.append("config.offload_tblgen = ''")
    lines.append(f"lit_config.load_config(config, {os.path.join(suite_dir(major), 'lit.cfg')!r})")
    lines.append("path = config.environment.get('LD_LIBRARY_PATH')")
    lines.append(f"config.environment['LD_LIBRARY_PATH'] = {run.runtime_dir!r} + (':' + path if path else '')")
    lines.append(f"config.environment['LIT_CC_CACHE_DIR'] = {cc_cache_dir(major)!r}")
    lines.append(f"config.environment['LIT_CC_CACHE_ROOT'] = {exec_root!r}")
    os.makedirs(exec_root, exist_ok=True)
    with open(os.path.join(exec_root, "lit.site.cfg"), "w") as f:
        f.write("\n".join(lines) + "\n")


def children_cpu():
    """User and system seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_lit(major, run, out_dir, jobs, filter_re):
    """Run the suite as `run` says; the sets of tests that passed and ran."""
    runtime = run.name
    exec_root = os.path.join(out_dir, runtime)
    write_site_config(major, run, exec_root)
    # llvm-NN-tools ships lit (19: build/utils/lit/lit.py, 22: bin/lit).
    candidates = [f"/usr/lib/llvm-{major}/build/utils/lit/lit.py", f"/usr/lib/llvm-{major}/bin/lit"]
    lit = next((c for c in candidates if os.path.isfile(c)), None)
    if lit is None:
        sys.exit(f"no lit in {candidates}: apt-get install llvm-{major}-tools")
    xml = os.path.join(out_dir, f"{runtime}.xml")
    cmd = [sys.executable, lit, "-q", "-j", str(jobs), "--xunit-xml-output", xml]
    if filter_re:
        cmd += ["--filter", filter_re]
    cmd.append(exec_root)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LIBOMPTARGET_", "OMPTARGET_", "OMP_", "KMP_", "LD_"))}
    print(f"$ {' '.join(cmd)}", flush=True)
    if os.path.isfile(xml):
        os.remove(xml)
    started, cpu = time.monotonic(), children_cpu()
    subprocess.run(cmd, env=env)
    # The CPU time too: the wall time depends on whatever else the machine runs.
    print(f"LLVM {major}, {runtime}: {time.monotonic() - started:.0f} s "
          f"({children_cpu() - cpu:.0f} s of CPU)", flush=True)
    # A suite that could not be set up (lit's config error) runs nothing:
    # that is a failure of the harness, never an empty comparison.
    if not os.path.isfile(xml):
        sys.exit(f"LLVM {major}: lit wrote no results for the {runtime} run (see above)")
    cases = list(ET.parse(xml).getroot().iter("testcase"))
    if not cases and not filter_re:
        sys.exit(f"LLVM {major}: lit ran no test of the suite for the {runtime} run")
    passed = set()
    ran = set()
    if True:
        for case in cases:
            # classname "libomptarget :: x86_64-pc-linux-gnu.mapping", name
            # "foo.c": the test's path in the suite, mapping/foo.c.
            folder = case.get("classname", "").partition(".")[2]
            name = "/".join(p for p in (folder.replace(".", "/"), case.get("name")) if p)
            failed = any(c.tag in ("failure", "error", "skipped") for c in case)
            ran.add(name)
            if not failed:
                passed.add(name)
    with open(os.path.join(out_dir, f"{runtime}.passed"), "w") as f:
        f.writelines(f"{t}\n" for t in sorted(passed))
    return passed, ran


def read_known(path):
    """`RELEASE path` lines of the known-regressions file ('#' comments):
    (release, path) for both link forms, (release, "own-name:" + path)
    for the own-name form alone."""
    known = set()
    if not path:
        return known
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            release, _, test = line.partition(" ")
            known.add((int(release), test.strip()))
    return known


# What each release's runtime passes at least, as measured on 2026-12-02
# (69, 133, 186): a reference that passes far fewer is broken (a missing
# tool, a bad site config), and an empty comparison would prove nothing.
MIN_REFERENCE = {14: 65, 19: 125, 22: 175}


def confirm(major, run, regressions, out_dir, jobs):
    """Run `regressions` twice more on the reference and as `run` (in
    their own exec roots, so the first run's lists stay). A test is flaky
    on ours only when both reruns pass on ours; otherwise (a rerun failed
    on ours, or did not run it) it is confirmed, unless the reference
    itself failed it in a rerun (then it is not counted: the reference is
    flaky)."""
    if not regressions:
        return [], []
    names = "|".join(re.escape(t) for t in regressions)
    rerun = os.path.join(out_dir, "rerun")
    os.makedirs(rerun, exist_ok=True)
    ours_passed_all = set(regressions)
    ref_failed_any = set()
    for _ in range(2):
        ref, ref_ran = run_lit(major, runs(major)["reference"], rerun, jobs, f"({names})$")
        ours, _ = run_lit(major, run, rerun, jobs, f"({names})$")
        ours_passed_all &= ours
        ref_failed_any |= {t for t in regressions if t in ref_ran and t not in ref}
    flaky = [t for t in regressions if t in ours_passed_all]
    confirmed = [t for t in regressions if t not in ours_passed_all and t not in ref_failed_any]
    return confirmed, flaky


def label(run, test):
    """A regression's name in reports and the known list: the path, with
    `own-name:` before it for the own-name link form."""
    return test if run.name == "ours" else f"{run.name}:{test}"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", type=int, action="append", choices=[14, 19, 22])
    p.add_argument("--filter", help="only tests whose path matches (lit --filter)")
    p.add_argument("--runtime", choices=["all", "reference", "ours", "own-name"], default="all",
                   help="all: the reference and ours in both link forms, compared")
    p.add_argument("-j", type=int, default=os.cpu_count() or 2)
    p.add_argument("--known", help="known regressions (RELEASE path lines) that do not fail the run")
    args = p.parse_args()
    known = read_known(args.known)
    releases = args.release or [14, 19, 22]
    missing = [m for m in releases if not os.path.isfile(os.path.join(suite_dir(m), "lit.cfg"))]
    for m in missing:
        print(f"LLVM {m}: no lit suite at {suite_dir(m)} (.ci/llvm-sources.sh could not unpack it)")
    if missing and args.known:
        # The checked run (CI's) compares every release or fails.
        sys.exit(1)
    worse = 0
    for major in releases:
        if major in missing:
            continue
        out_dir = os.path.join(OMPTARGET, "lit", str(major))
        os.makedirs(out_dir, exist_ok=True)
        shutil.rmtree(cc_cache_dir(major), ignore_errors=True)
        wanted = ["reference", "ours", "own-name"] if args.runtime == "all" else [args.runtime]
        passed = {name: run_lit(major, runs(major)[name], out_dir, args.j, args.filter)[0]
                  for name in wanted}
        if "reference" not in passed or len(passed) == 1:
            continue
        ref = passed["reference"]
        regressions, flaky, counts = [], [], []
        for name in ("ours", "own-name"):
            run = runs(major)[name]
            failing = sorted(ref - passed[name])
            # Known ones are expected to fail: only the others are rerun.
            expected = [t for t in failing if {(major, t), (major, label(run, t))} & known]
            confirmed, unsure = confirm(
                major, run, [t for t in failing if t not in expected], out_dir, args.j)
            regressions += [label(run, t) for t in sorted(expected + confirmed)]
            flaky += [label(run, t) for t in unsure]
            counts.append(f"{len(passed[name])} on ours ({name.replace('ours', 'linked as the release')})")
        with open(os.path.join(out_dir, "regressions"), "w") as f:
            f.writelines(f"{t}\n" for t in regressions)
        print(f"LLVM {major}: {len(ref)} pass on the reference, {', '.join(counts)}; "
              f"{len(regressions)} pass there and not here")
        def is_known(t):
            return (major, t) in known or (major, t.split(":", 1)[-1]) in known
        for t in regressions:
            print(f"  {t}{'   (known)' if is_known(t) else ''}")
        for t in flaky:
            print(f"  FLAKY on ours (failed, then passed on a rerun): {t}")
        new = [t for t in regressions if not is_known(t)]
        if args.known and not args.filter:
            # The list is exact: a listed test that passes on ours must be
            # taken off, so that it cannot hide a later regression.
            fixed = sorted(t for (m, t) in known if m == major
                           and t.split(":", 1)[-1] in passed["own-name"]
                           and (t.startswith("own-name:") or t in passed["ours"]))
            for t in fixed:
                print(f"  FIXED, take it off {args.known}: {major} {t}")
            worse += len(fixed)
            if len(ref) < MIN_REFERENCE[major]:
                print(f"LLVM {major}: only {len(ref)} tests pass on the reference "
                      f"(at least {MIN_REFERENCE[major]} expected): the suite is not set up")
                worse += 1
        if args.known:
            print(f"LLVM {major}: {len(new)} regressions not in {args.known}")
            for t in new:
                print(f"  NEW: {t}")
        worse += len(new)
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
