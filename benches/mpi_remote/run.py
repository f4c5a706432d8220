#!/usr/bin/env python3
"""Remote devices over MPI against the transport's own limits, as ratios,
in one run on one machine.

Builds remote.c (clang-14 OpenMP offload + Open MPI's flags), stages a
release build of our runtime, and runs MPI jobs of three ranks: the
benchmark (its only plugin the MPI one, so its device is remote), an echo
rank (the peer of MPI's own ping-pong and bandwidth, over the same MPI
library and transport), and one omptarget-mpi-device. Then two short jobs
count what a region mapping 16 arrays costs in requests the server
answers (round trips), from the server's shutdown line: K regions minus
none, over K.

Each MPI family installed here is measured in turn (Open MPI's mpirun,
MPICH's mpiexec.hydra; the benchmark built with that family's mpicc), so
each row has a figure per family.

Rows and targets (issue 30):
  empty_region / mpi_ping_pong          at most 1.5 (one request, one reply is the floor;
                                                     each round's region over the ping-pong
                                                     of the same round, medians)
  update_to/from_64MiB / MPI bandwidth  at least 0.95
  region_16_arrays round trips          at most 3   (not one per array)

Usage (from anywhere in the repository):
  benches/mpi_remote/run.py                 # 5 runs per family, medians
  benches/mpi_remote/run.py --family openmpi   # one family only (openmpi, mpich)
  benches/mpi_remote/run.py --update-doc    # also rewrite BENCHMARKS.md's section and
                                            # benches/mpi_ratios.svg
  benches/mpi_remote/run.py --quick         # CI: one short run on the staged debug
                                            # libraries; checks results, asserts no time
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.join(ROOT, "benches", "mpi_remote")
sys.path.insert(0, os.path.join(ROOT, "benches", "llvm_comparison"))
from compare import machine  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "benches"))
import ratio_chart  # noqa: E402  (the one SVG writer)

REGION_COUNT = 200


# Each family: its name in the table, its mpicc, and how it shows its flags.
FAMILIES = {
    "openmpi": ("Open MPI", "mpicc.openmpi", ("--showme:compile", "--showme:link")),
    "mpich": ("MPICH", "mpicc.mpich", ("-compile_info", "-link_info")),
}


def build(out_dir, family):
    os.makedirs(out_dir, exist_ok=True)
    _, mpicc, shows = FAMILIES[family]
    flags = []
    for show in shows:
        words = subprocess.run([mpicc, show], check=True, stdout=subprocess.PIPE) \
            .stdout.decode().split()
        # MPICH's -compile_info/-link_info start with the compiler itself,
        # and name the source-less flags only.
        flags.append([w for w in words[1:] if w != "-c"] if family == "mpich" else words)
    binary = os.path.join(out_dir, f"remote.{family}")
    subprocess.run(["clang-14", "-O2", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu",
                    *flags[0], os.path.join(HERE, "remote.c"), "-o", binary, *flags[1]],
                   check=True)
    return binary


def job(binary, lib, env, family):
    """One job; (the benchmark's "name value" lines, the server's line)."""
    server = os.path.join(lib, "..", "bin", "omptarget-mpi-device")
    program_env = {"LD_LIBRARY_PATH": lib,
                   "OMPTARGET_PLUGINS": os.path.join(lib, "libomptarget.rtl.mpi.so"), **env}
    echo_env = {"LD_LIBRARY_PATH": lib}
    server_env = {"OMPTARGET_HOST_DEVICES": "1", "OMPTARGET_SHUTDOWN_REPORT": "stderr"}
    if family == "openmpi":
        # Three processes on a machine of two cores is oversubscribed, where
        # Open MPI yields the core on every idle poll; the echo rank and the
        # server nap when idle, so at most two processes poll at a time: no
        # yielding, for the floor and the offload rows alike.
        cmd = ["mpirun", "--oversubscribe", "--mca", "mpi_yield_when_idle", "0"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        per_context = lambda env: [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
    else:
        # Hydra says nothing of the job's contexts: every rank is told the
        # job may have servers (the server ignores it; the benchmark's two
        # ranks join as program ranks, as under Open MPI), and every rank
        # opens MPICH's library.
        cmd = ["mpiexec.hydra", "-genv", "OMPTARGET_MPI_FAMILY", "mpich",
               "-genv", "OMPTARGET_MPI", "1"]
        per_context = lambda env: [a for k, v in env.items() for a in ("-env", k, v)]
    cmd += per_context(program_env) + ["-np", "1", binary, ":"]
    cmd += per_context(echo_env) + ["-np", "1", binary, ":"]
    cmd += per_context(server_env) + ["-np", "1", server]
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("OMPTARGET_", "LIBOMPTARGET_", "OMP_"))}
    out = subprocess.run(cmd, env=clean, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=600)
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    values = {}
    for line in stdout.splitlines():
        name, _, value = line.partition(" ")
        values[name] = float(value)
    if out.returncode != 0 or values.get("results_right") != 1:
        sys.exit(f"the benchmark job failed ({out.returncode}):\n{stdout}\n{stderr}")
    server_line = next((l for l in stderr.splitlines()
                        if l.startswith("omptarget-mpi-device rank ")), "")
    return values, server_line


def answered(server_line):
    m = re.search(r"(\d+) request\(s\) answered, (\d+) one-way", server_line)
    if not m:
        sys.exit(f"no request count in the server's line: {server_line!r}")
    return int(m.group(1)), int(m.group(2))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--update-doc", action="store_true")
    p.add_argument("--family", choices=list(FAMILIES))
    p.add_argument("--out-dir", default=os.path.join(ROOT, "target", "bench", "mpi_remote"))
    a = p.parse_args()
    if a.quick:
        a.runs = 1
        staged = subprocess.run(["cargo", "run", "-q", "-p", "xtask", "--", "stage"], cwd=ROOT,
                                check=True, stdout=subprocess.PIPE).stdout.decode()
    else:
        staged = subprocess.run(["cargo", "run", "-q", "-p", "xtask", "--", "stage",
                                 "--release"], cwd=ROOT, check=True,
                                stdout=subprocess.PIPE).stdout.decode()
    lib = os.path.abspath(staged.strip().splitlines()[-1])
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    families = [a.family] if a.family else list(FAMILIES)
    tables, all_rows = [], []
    for family in families:
        rows = measure(family, a, lib)
        all_rows += [(f"{FAMILIES[family][0]}: {name}", *rest) for name, *rest in rows]
        tables.append(f"{FAMILIES[family][0]}:\n\n" + table_of(rows))
    header = (f"Machine: {machine()}. {a.runs} run(s) per family, medians; {started}; "
              f"`benches/mpi_remote/run.py{' --quick' if a.quick else ''}`.")
    text = header + "\n\n" + "\n\n".join(tables) + "\n"
    print(text)
    if a.quick:
        return
    if a.update_doc:
        doc = os.path.join(ROOT, "BENCHMARKS.md")
        with open(doc) as f:
            content = f.read()
        begin, end = "<!-- mpi-remote:begin -->", "<!-- mpi-remote:end -->"
        if begin not in content:
            sys.exit(f"BENCHMARKS.md has no {begin} marker")
        head, rest = content.split(begin, 1)
        _, tail = rest.split(end, 1)
        with open(doc, "w") as f:
            f.write(head + begin + "\n" + text + end + tail)
        svg(all_rows, os.path.join(ROOT, "benches", "mpi_ratios.svg"))
        print("rewrote BENCHMARKS.md's remote section and benches/mpi_ratios.svg")


def table_of(rows):
    table = ["| row | ratio | target | met | figures |", "|---|---|---|---|---|"]
    for name, ratio, target, met, figures in rows:
        mark = "" if met is None else ("yes" if met else "**no**")
        table.append(f"| `{name}` | {ratio:.2f} | {target} | {mark} | {figures} |")
    return "\n".join(table)


def measure(family, a, lib):
    """The rows of one family: (name, ratio, target, met, figures)."""
    binary = build(a.out_dir, family)
    env = {"BENCH_QUICK": "1"} if a.quick else {}
    runs = [job(binary, lib, env, family)[0] for _ in range(a.runs)]
    base = answered(job(binary, lib, {"BENCH_REGION16_ONLY": "0"}, family)[1])
    k = 20 if a.quick else REGION_COUNT
    with_k = answered(job(binary, lib, {"BENCH_REGION16_ONLY": str(k)}, family)[1])
    trips = (with_k[0] - base[0]) / k
    one_way = (with_k[1] - base[1]) / k

    med = {name: statistics.median(r[name] for r in runs) for name in runs[0]}
    # The ratio pairs each round's region with its own round's ping-pong
    # (the median of those per run, then over runs).
    each_run = ", ".join(f"{r['empty_region_over_ping_pong']:.2f}" for r in runs)
    return [
        ("empty_region / mpi_ping_pong", med["empty_region_over_ping_pong"],
         "<= 1.5", med["empty_region_over_ping_pong"] <= 1.5,
         f"{med['empty_region_s'] * 1e6:.1f} us / {med['mpi_ping_pong_s'] * 1e6:.1f} us; "
         f"each run: {each_run}"),
        ("update_to_64MiB / mpi_bandwidth_to", med["update_to_64MiB_Bps"] /
         med["mpi_bandwidth_to_Bps"], ">= 0.95",
         med["update_to_64MiB_Bps"] / med["mpi_bandwidth_to_Bps"] >= 0.95,
         f"{med['update_to_64MiB_Bps'] / 2**30:.2f} / {med['mpi_bandwidth_to_Bps'] / 2**30:.2f} GiB/s"),
        ("update_from_64MiB / mpi_bandwidth_from", med["update_from_64MiB_Bps"] /
         med["mpi_bandwidth_from_Bps"], ">= 0.95",
         med["update_from_64MiB_Bps"] / med["mpi_bandwidth_from_Bps"] >= 0.95,
         f"{med['update_from_64MiB_Bps'] / 2**30:.2f} / {med['mpi_bandwidth_from_Bps'] / 2**30:.2f} GiB/s"),
        ("region_16_arrays round trips", trips, "<= 3", trips <= 3,
         f"{trips:.2f} answered requests + {one_way:.2f} one-way copies per region"),
        ("region_16_arrays / mpi_ping_pong", med["region_16_arrays_s"] / med["mpi_ping_pong_s"],
         "", None, f"{med['region_16_arrays_s'] * 1e6:.1f} us (time in ping-pong round trips)"),
    ]


def svg(rows, path):
    """Bars of each ratio against its target (log scale)."""
    groups = [(name, [ratio_chart.Bar(ratio, float(target.split()[-1]),
                                      "#5aa05a" if met else "#c05050", f"{name}: {ratio:.2f}")])
              for name, ratio, target, met, _ in rows if target]
    ratio_chart.write(path, "remote devices over MPI: ratio (log scale; | marks the target)",
                      groups, (0.1, 0.5, 0.8, 1, 2, 3, 10), (0.1, 10), bar=14, gap=10, left=380,
                      width=400)


if __name__ == "__main__":
    main()
