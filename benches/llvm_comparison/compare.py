#!/usr/bin/env python3
"""Run the same clang offload binaries on LLVM's libomptarget and on ours,
alternating, and compare them.

One command builds the C benchmarks (offload_overhead.c, one_region.c,
live_at_exit.c) with
each clang release that has a reference runtime here, stages a release build
of our runtime, runs every binary PAIRS times on each runtime (the order
alternates from pair to pair, so drift in the machine's load hits both
alike), and prints a table: per row the median and min-max of each runtime
and the ratio ours / LLVM (below 1: we are faster), with the issue's target.

Usage (from anywhere in the repository):
  benches/llvm_comparison/compare.py                 # 5 pairs, 20000 iterations, clang 14/19/22
  benches/llvm_comparison/compare.py --pairs 9 --compilers 14
  benches/llvm_comparison/compare.py --update-doc    # also rewrite BENCHMARKS.md's table and plot
  benches/llvm_comparison/compare.py --quick         # CI: 1 pair, few iterations, debug libs,
                                                     # checks results, asserts no time

A release whose reference runtime is missing is skipped with a message
(clang 19/22 need `cargo xtask deps`, which unpacks LLVM 19's and 22's
runtimes under target/omptarget/llvm-releases).
"""
import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.join(ROOT, "benches", "llvm_comparison")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import releases  # noqa: E402  (the one table of the releases' paths)
sys.path.insert(0, os.path.join(ROOT, "benches"))
import ratio_chart  # noqa: E402  (the one SVG writer)

# The open issue's targets (issue 31, against LLVM 14; the others from
# earlier issues): ratio ours / LLVM at most this (None: no target).
TARGETS = {
    "empty_region": 0.4,  # 0.33 remains the goal
    "map_tofrom_scalar": 0.5,
    "target_alloc_free_64B": 0.7,
    "target_alloc_free_4KiB": 0.7,
    "target_alloc_free_1MiB": 0.7,
    "alloc_free_1000_live_random": 0.5,
    "enter_data_at_100k_mappings": 0.6,
    "is_present_at_100k_mappings": 0.5,
    "exit_data_at_100k_mappings": 0.6,
    "one_region_process_wall_ms": 0.1,
    "one_region_process_peak_rss_mb": 0.08,
    "live_at_exit_process_wall_ms": 1.0,
}
# Derived rows: (name, how, target, target is "at most" (True) or "at least").
GROWTH = ["enter_data", "is_present", "exit_data"]
THREADS = [2, 8]


def reference_lib(release):
    """LLVM's own runtime for a clang release, or None."""
    d = releases.lib_dir(release)
    return d if os.path.exists(os.path.join(d, soname(release))) else None


def soname(release):
    return releases.soname(release)


def build(release, out_dir, ref_lib):
    cc = shutil.which(f"clang-{release}")
    if not cc:
        return None
    # clang 19/22: omp.h and the link-time libomp/libomptarget come from the
    # unpacked runtime (their libomp-dev packages conflict with 14's).
    extra = [] if release == "14" else [f"-I{releases.include_dir(release)}", f"-L{ref_lib}"]
    bins = {"measure": os.path.join(out_dir, "measure")}
    subprocess.run(["cc", "-O2", os.path.join(HERE, "measure.c"), "-o", bins["measure"]],
                   check=True)
    for prog in ("offload_overhead", "one_region", "live_at_exit"):
        out = os.path.join(out_dir, f"{prog}.clang{release}")
        subprocess.run([cc, "-O2", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", *extra,
                        os.path.join(HERE, f"{prog}.c"), "-o", out, "-lpthread"], check=True)
        bins[prog] = out
    return bins


def run_once(binary, args, lib_path, env_extra, measure):
    """Run a binary through `measure` (measure.c); return (stdout, wall
    seconds, peak RSS in KiB). The child is forked by that small program,
    not by Python: exec keeps the old address space's high-water mark, so a
    child of Python would report at least Python's RSS."""
    env = dict(os.environ, LD_LIBRARY_PATH=lib_path, **env_extra)
    proc = subprocess.run([measure, binary, *args], env=env, capture_output=True)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    if proc.returncode != 0 or "FAILED" in out:
        sys.exit(f"{binary} on {lib_path} failed ({proc.returncode}):\n{out}{err}")
    figures = dict(line.split() for line in err.splitlines()
                   if line.startswith(("wall_ns ", "peak_rss_kb ")))
    return out, int(figures["wall_ns"]) / 1e9, int(figures["peak_rss_kb"])


def parse(out, expect_lib):
    values = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "runtime":
            if not value.startswith(expect_lib + "/"):
                sys.exit(f"the run loaded {value}, not a library in {expect_lib}")
        elif key not in ("multithreaded", "first_region_once", "peak_rss_kb"):
            values[key] = float(value)
    return values


def measure(release, bins, ours_lib, ref_lib, pairs, iters, mode):
    """{row: {"llvm": [...], "ours": [...]}} over the pairs."""
    # OMP_TOOL=disabled: with the reference folder on the library path,
    # libomp finds and loads its OMPT tool libarcher.so (and libstdc++
    # with it: +1.8 MB peak RSS, ~1 ms), which no user's process would (a
    # folder on no search path). Both runtimes run without it.
    env = {"OMP_TOOL": "disabled"}
    if mode == "multi":
        env["OO_MULTITHREADED"] = "1"
    # Ours first on the path; the reference folder still provides libomp
    # (and, for 19/22, what their libomptarget links against).
    libs = {"llvm": ref_lib, "ours": f"{ours_lib}:{ref_lib}"}
    expect = {"llvm": ref_lib, "ours": ours_lib}
    rows = {}
    for pair in range(pairs):
        order = ("llvm", "ours") if pair % 2 == 0 else ("ours", "llvm")
        for who in order:
            out, _, _ = run_once(bins["offload_overhead"], [str(iters)], libs[who], env,
                                 bins["measure"])
            for key, value in parse(out, expect[who]).items():
                rows.setdefault(key, {"llvm": [], "ours": []})[who].append(value)
            # The whole process with one region: wall time and peak RSS.
            walls, rss = [], []
            for _ in range(3):
                out, wall, peak = run_once(bins["one_region"], [], libs[who], env,
                                           bins["measure"])
                walls.append(wall * 1e3)
                rss.append(peak / 1024)
            rows.setdefault("one_region_process_wall_ms", {"llvm": [], "ours": []})[who].append(
                statistics.median(walls))
            rows.setdefault("one_region_process_peak_rss_mb", {"llvm": [], "ours": []})[
                who].append(statistics.median(rss))
            # A whole process that leaves 10,000 blocks live at exit.
            walls = [run_once(bins["live_at_exit"], [], libs[who], env, bins["measure"])[1] * 1e3
                     for _ in range(3)]
            rows.setdefault("live_at_exit_process_wall_ms", {"llvm": [], "ours": []})[
                who].append(statistics.median(walls))
    return rows


def derived(rows):
    """Growth 1k -> 100k mappings and thread scaling, per pair."""
    out = {}
    for op in GROWTH:
        lo, hi = rows.get(f"{op}_at_1k_mappings"), rows.get(f"{op}_at_100k_mappings")
        if lo and hi:
            out[f"{op}_growth_1k_to_100k"] = {
                who: [h / l for l, h in zip(lo[who], hi[who])] for who in ("llvm", "ours")}
    one = rows.get("empty_region_1_thread")
    for n in THREADS:
        many = rows.get(f"empty_region_{n}_threads_aggregate")
        if one and many:
            out[f"threads_{n}_speedup_vs_1"] = {
                who: [o / m for o, m in zip(one[who], many[who])] for who in ("llvm", "ours")}
    return out


DERIVED_TARGETS = {  # (bound, "max" or "min") on our own value, not a ratio
    "enter_data_growth_1k_to_100k": (1.5, "max"),
    "is_present_growth_1k_to_100k": (1.5, "max"),
    "exit_data_growth_1k_to_100k": (1.5, "max"),
    "threads_2_speedup_vs_1": (1.6, "min"),
    "update_to_64MiB_vs_memcpy": (0.95, "min"),
}


def fmt(v):
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def table(release, rows, extra, pairs):
    lines = [f"clang-{release} binaries, {pairs} pairs (medians; min-max)", "",
             "| row | LLVM | ours | ours / LLVM | target | met |",
             "|---|---|---|---|---|---|"]
    plot = []
    for name, vals in list(rows.items()) + list(extra.items()):
        l, o = vals["llvm"], vals["ours"]
        lm, om = statistics.median(l), statistics.median(o)
        cell = lambda v, m: f"{fmt(m)} ({fmt(min(v))}-{fmt(max(v))})"
        if name in DERIVED_TARGETS:
            bound, kind = DERIVED_TARGETS[name]
            met = om <= bound if kind == "max" else om >= bound
            lines.append(f"| {name} | {cell(l, lm)} | {cell(o, om)} | | "
                         f"{'<=' if kind == 'max' else '>='} {bound} | {'yes' if met else 'no'} |")
            continue
        if name.endswith(("_growth_1k_to_100k", "_speedup_vs_1")):
            lines.append(f"| {name} | {cell(l, lm)} | {cell(o, om)} | | | |")
            continue
        ratio = om / lm if lm > 0 else float("nan")
        target = TARGETS.get(name)
        met = "" if target is None else ("yes" if ratio <= target else "no")
        lines.append(f"| {name} | {cell(l, lm)} | {cell(o, om)} | {ratio:.2f} | "
                     f"{'' if target is None else '<= ' + str(target)} | {met} |")
        plot.append((name, ratio, target))
    return "\n".join(lines), plot


def svg(plots, path):
    """A horizontal bar chart of ours / LLVM per row (log scale), one group
    of bars per clang release, with the target of each row marked."""
    names = []
    for _, plot in plots:
        for name, _, _ in plot:
            if name not in names:
                names.append(name)
    colors = ["#4878a8", "#e08b3c", "#5aa05a"]
    groups = []
    for name in names:
        bars = []
        for i, (release, plot) in enumerate(plots):
            for r, t in [(r, t) for n, r, t in plot if n == name][:1]:
                bars.append(ratio_chart.Bar(r, t, colors[i % 3], f"clang-{release} {name}: {r:.2f}"))
        groups.append((name, bars))
    legend = [(colors[i % 3], f"clang-{release}") for i, (release, _) in enumerate(plots)]
    ratio_chart.write(path, "ours / LLVM (log scale; left of 1 is faster; | marks the target)",
                      groups, (0.1, 0.33, 0.5, 1, 2, 5, 10), (0.05, 20), legend)


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            cpu = m.group(1) if m else cpu
    except OSError:
        pass
    return (f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), "
            f"load average {os.getloadavg()[0]:.1f} at the start")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--iters", type=int, default=20000)
    p.add_argument("--compilers", default="14,19,22")
    p.add_argument("--mode", choices=("single", "multi"), default="single")
    p.add_argument("--lib", help="our staged lib folder (default: stage a release build)")
    p.add_argument("--out-dir", default=os.path.join(ROOT, "target", "bench"))
    p.add_argument("--update-doc", action="store_true",
                   help="rewrite the table in BENCHMARKS.md and benches/ratios.svg")
    p.add_argument("--quick", action="store_true",
                   help="1 pair, 300 iterations, the staged debug libraries: checks, no timing")
    a = p.parse_args()
    if a.quick:
        a.pairs, a.iters = 1, 300
        a.lib = a.lib or os.path.join(ROOT, "target", "omptarget", "lib")
    if a.pairs < 1 or a.iters < 1:
        sys.exit("--pairs and --iters must be positive")
    os.makedirs(a.out_dir, exist_ok=True)
    if a.lib:
        ours = os.path.abspath(a.lib)
    else:
        staged = subprocess.run(["cargo", "run", "-q", "-p", "xtask", "--", "stage", "--release"],
                                cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout.decode()
        ours = os.path.abspath(staged.strip().splitlines()[-1])

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    header = (f"Machine: {machine()}. Mode: {a.mode}-threaded process. "
              f"{a.iters} iterations per op per run. Started {started}.")
    print(header)
    tables, plots = [], []
    for release in a.compilers.split(","):
        ref = reference_lib(release)
        if ref is None:
            print(f"\nclang-{release}: skipped: LLVM {release}'s runtime is not here "
                  "(cargo xtask deps unpacks it)")
            continue
        if not os.path.exists(os.path.join(ours, soname(release))):
            print(f"\nclang-{release}: skipped: {ours} has no {soname(release)}")
            continue
        bins = build(release, a.out_dir, ref)
        if bins is None:
            print(f"\nclang-{release}: skipped: clang-{release} is not installed")
            continue
        rows = measure(release, bins, ours, ref, a.pairs, a.iters, a.mode)
        text, plot = table(release, rows, derived(rows), a.pairs)
        if a.quick:
            print(f"\nclang-{release}: {len(rows)} rows measured, every check passed")
        else:
            print("\n" + text)
        tables.append(text)
        plots.append((release, plot))
    if not tables:
        sys.exit("no release could be compared")
    if a.quick:
        print("\nquick mode: every program ran and passed its checks; the figures mean nothing")
        return
    svg(plots, os.path.join(a.out_dir, "ratios.svg"))
    print(f"\nplot: {os.path.join(a.out_dir, 'ratios.svg')}")
    if a.update_doc:
        shutil.copy(os.path.join(a.out_dir, "ratios.svg"), os.path.join(ROOT, "benches", "ratios.svg"))
        doc = os.path.join(ROOT, "BENCHMARKS.md")
        text = open(doc).read()
        begin, end = "<!-- compare.py begin -->", "<!-- compare.py end -->"
        if begin not in text or end not in text:
            sys.exit(f"{doc} has no {begin} ... {end} section")
        cmd = "benches/llvm_comparison/compare.py " + " ".join(sys.argv[1:])
        body = (f"{begin}\n`{cmd.strip()}`\n\n{header}\n\n" + "\n\n".join(tables) +
                "\n\n![ours / LLVM per row](benches/ratios.svg)\n" + end)
        text = text[:text.index(begin)] + body + text[text.index(end) + len(end):]
        with open(doc, "w") as f:
            f.write(text)
        print(f"updated {doc} and benches/ratios.svg")


if __name__ == "__main__":
    main()
