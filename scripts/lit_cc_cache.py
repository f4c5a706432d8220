#!/usr/bin/env python3
"""The compiler of scripts/llvm-lit.py's runs: clang, once per distinct build.

A lit suite is run on the release's runtime and on ours with the same
binaries, and lit's RUN lines compile and run in one go, so each test was
compiled once per run. This wrapper stands in for `%clang`/`%clangxx`
(`lit_cc_cache.py REAL_COMPILER ARGS...`): a build whose command line,
with the run's own folder (`LIT_CC_CACHE_ROOT`) written as `@ROOT@`, and
whose input files are the same as an earlier successful build's in this
invocation of llvm-lit.py gets that build's output file, standard output,
standard error and status back instead of a new compile. Anything else
(no `-o FILE`, a failed build, an output written to standard output) runs
the compiler as it is, and so does a build that names the run's folder
anywhere but in its output (a library of the test linked by path, an
rpath: the binary would record the first run's folder). The cache (`LIT_CC_CACHE_DIR`) is emptied by
llvm-lit.py when it starts, so nothing outlives the libraries it linked.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile


def output_of(args):
    """The `-o` file, or None (no -o, or standard output)."""
    for i, arg in enumerate(args):
        if arg == "-o" and i + 1 < len(args):
            out = args[i + 1]
        elif arg.startswith("-o") and len(arg) > 2:
            out = arg[2:]
        else:
            continue
        return None if out == "-" else out
    return None


def key_of(compiler, args, root):
    """What the build's result depends on: the compiler, the arguments
    with the run's folder taken out, the working directory likewise, and
    the content of every argument that names a file."""
    h = hashlib.sha256()
    norm = (lambda s: s.replace(root, "@ROOT@")) if root else (lambda s: s)
    out = output_of(args)
    for part in [compiler, norm(os.getcwd())] + [norm(a) for a in args]:
        h.update(part.encode() + b"\0")
    for arg in args:
        # `-I dir`, `-L dir` are folders; -Wl,... and flags are not files.
        if arg != out and os.path.isfile(arg):
            with open(arg, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def main():
    compiler, args = sys.argv[1], sys.argv[2:]
    cache = os.environ.get("LIT_CC_CACHE_DIR")
    out = output_of(args)
    root = os.environ.get("LIT_CC_CACHE_ROOT", "")
    names_root = root and any(root in a for a in args if a != out)
    if not cache or out is None or names_root:
        os.execv(compiler, [compiler] + args)
    entry = os.path.join(cache, key_of(compiler, args, root))
    if os.path.isdir(entry):
        shutil.copyfile(os.path.join(entry, "output"), out)
        shutil.copymode(os.path.join(entry, "output"), out)
        for stream, name in ((sys.stdout, "stdout"), (sys.stderr, "stderr")):
            with open(os.path.join(entry, name), "rb") as f:
                stream.buffer.write(f.read())
        return 0
    done = subprocess.run([compiler] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sys.stdout.buffer.write(done.stdout)
    sys.stderr.buffer.write(done.stderr)
    if done.returncode == 0 and os.path.isfile(out):
        # Written beside the entry and renamed into place: a parallel lit
        # job sees a whole entry or none.
        os.makedirs(cache, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=cache, prefix=".new-")
        shutil.copy2(out, os.path.join(tmp, "output"))
        with open(os.path.join(tmp, "stdout"), "wb") as f:
            f.write(done.stdout)
        with open(os.path.join(tmp, "stderr"), "wb") as f:
            f.write(done.stderr)
        try:
            os.rename(tmp, entry)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another job stored it first
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
