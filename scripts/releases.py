"""The LLVM releases' paths, read from tests/releases.tsv: the one table
that the Rust test support (tests/support/src/release.rs), the lit harness
(scripts/llvm-lit.py) and the benchmark comparison
(benches/llvm_comparison/compare.py) all read."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Cargo's target directory (a relative CARGO_TARGET_DIR is relative to the
# current directory, as for cargo).
TARGET = os.path.abspath(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"))
OMPTARGET = os.path.join(TARGET, "omptarget")
TABLE = os.path.join(ROOT, "tests", "releases.tsv")


def _rows():
    rows = {}
    with open(TABLE) as table:
        for line in table:
            if line.startswith("#") or not line.strip():
                continue
            major, lib_dir, soname, include_dir, lit_suite = line.rstrip("\n").split("\t")
            rows[int(major)] = (lib_dir, soname, include_dir, lit_suite)
    return rows


ROWS = _rows()
MAJORS = sorted(ROWS)


def lib_dir(major):
    """The reference runtime's library folder (with its libomp)."""
    return os.path.join(OMPTARGET, ROWS[int(major)][0])


def soname(major):
    """The release's libomptarget file name, as its clang links it."""
    return ROWS[int(major)][1]


def include_dir(major):
    """The folder of the release's omp.h."""
    return os.path.join(lib_dir(major), ROWS[int(major)][2])


def lit_suite_dir(major):
    """Where .ci/llvm-sources.sh unpacks the release's lit suite."""
    return os.path.join(OMPTARGET, "llvm-sources", f"llvm-{int(major)}", ROWS[int(major)][3])
