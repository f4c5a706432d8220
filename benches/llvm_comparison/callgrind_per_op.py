#!/usr/bin/env python3
"""Per-operation cost of one offload_overhead op under callgrind.

Runs the offload_overhead binary under `valgrind --tool=callgrind` twice,
timing only OP, with LOW and HIGH iterations, and divides the difference of
the two profiles by HIGH - LOW: start-up, checks and warm-up cancel out, and
what is left is the cost of one operation. Prints instructions per op, the
functions with the most exclusive instructions per op, and calls per op of
allocation and symbol-lookup functions.

Usage: benches/llvm_comparison/callgrind_per_op.py BINARY LIBDIR OP [LOW HIGH]
  e.g. benches/llvm_comparison/callgrind_per_op.py target/bench/offload_overhead \\
         target/omptarget/lib target_alloc_free_64B
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

# Allocation entry points whose callers are listed (substring match).
ALLOCATORS = ("__rust_alloc", "__rust_realloc", "malloc", "operator new")

# Functions whose call counts are worth reporting (prefix match on names).
WATCHED = ("malloc", "free", "calloc", "realloc", "cfree", "dlsym",
           "_dl_lookup_symbol_x", "pthread_mutex_lock", "__tls_get_addr")


def profile(binary, libdir, op, iters, outdir):
    out = os.path.join(outdir, f"cg.{iters}")
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={out}",
         binary, str(iters), op],
        env=env, check=True, stdout=subprocess.DEVNULL)
    return parse(out)


COMPRESSED_NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")


def resolve_name(table, spec):
    """A callgrind name spec, "(id) name" (defines id) or "(id)" (uses it),
    resolved through `table` (callgrind's name compression)."""
    m = COMPRESSED_NAME.match(spec)
    if not m:
        return spec
    if m.group(2) is not None:
        table[m.group(1)] = m.group(2)
    return table.get(m.group(1), spec)


def parse(path):
    """Exclusive Ir per function, call counts per callee, and call counts
    per (caller, callee) edge."""
    names = {}
    self_ir = collections.Counter()
    calls = collections.Counter()
    edges = collections.Counter()
    fn = None
    pending_call = None  # callee of the next cost line (a call cost)

    def resolve(spec):
        return resolve_name(names, spec)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = resolve(line[3:])
            elif line.startswith("cfn="):
                pending_call = resolve(line[4:])
            elif line.startswith("calls="):
                count = int(line[6:].split()[0])
                calls[pending_call] += count
                edges[(fn, pending_call)] += count
                pending_call = ("inclusive", pending_call)
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if isinstance(pending_call, tuple):
                    pending_call = None  # inclusive cost of a call: skip
                else:
                    self_ir[fn] += cost
            elif line.startswith(("cfi=", "cfl=", "cob=")):
                pass
    return self_ir, calls, edges


def is_allocator(name):
    # The callgrind name of a function may carry a "'2" recursion suffix
    # and a library in brackets; match on the name itself.
    bare = name.split("'")[0]
    return any(a in bare for a in ALLOCATORS) and "rdl" not in bare


def main():
    if len(sys.argv) not in (4, 6):
        sys.exit(__doc__)
    binary, libdir, op = sys.argv[1:4]
    low, high = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) == 6 else (500, 2500)
    with tempfile.TemporaryDirectory() as tmp:
        ir_lo, calls_lo, edges_lo = profile(binary, libdir, op, low, tmp)
        ir_hi, calls_hi, edges_hi = profile(binary, libdir, op, high, tmp)
    n = high - low
    per_op = {k: (ir_hi[k] - ir_lo.get(k, 0)) / n for k in ir_hi}
    total = sum(per_op.values())
    print(f"{op} with {libdir}: {total:.0f} instructions per op")
    print("top functions (exclusive instructions per op):")
    for name, ir in sorted(per_op.items(), key=lambda kv: -kv[1])[:20]:
        if ir < 1:
            break
        print(f"  {ir:9.0f}  {name[:150]}")
    print("calls per op:")
    for name in sorted(calls_hi):
        short = name.split("'")[0]
        if short.startswith(WATCHED):
            c = (calls_hi[name] - calls_lo.get(name, 0)) / n
            if c >= 0.01:
                print(f"  {c:7.2f}  {name[:120]}")

    print("allocation calls per op, by caller:")
    rows = []
    for (caller, callee), count in edges_hi.items():
        if not is_allocator(callee) or is_allocator(caller or ""):
            continue
        c = (count - edges_lo.get((caller, callee), 0)) / n
        if c >= 0.01:
            rows.append((c, caller, callee))
    for c, caller, callee in sorted(rows, key=lambda r: -r[0])[:15]:
        print(f"  {c:7.2f}  {callee.split(' ')[0][:30]:30} <- {str(caller)[:110]}")


if __name__ == "__main__":
    main()
