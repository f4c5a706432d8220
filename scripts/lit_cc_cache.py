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

The third run (ours, linked against our library's own name) builds the
same programs with other link flags (`-L`, `-Wl,-rpath`), so its command
lines differ and the cache above misses. So a build that compiles and
links one source file in one go is made in two steps, as clang's driver
makes it itself: the source compiled alone (`-c`, without the link-only
flags) into an object kept in the cache under the compile's own key, then
linked with the command line as given (the source replaced by that
object). The other run's build of the same source then only links. The
two steps are used only when both succeed and print nothing; otherwise
(a warning, an error) the build runs again in one go, so that what the
test sees (output, status, diagnostics) is the one-go build's.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

# Source files clang compiles (a language given by `-x` is not guessed).
SOURCE_SUFFIXES = (".c", ".cpp", ".cc", ".cxx", ".C")
# Options that take the next argument as their value: a source file right
# after one of them is that option's value, not an input.
SEPARATE_VALUE = {
    "-o", "-x", "-include", "-imacros", "-Xclang", "-Xlinker", "-Xopenmp-target",
    "-mllvm", "-MF", "-MT", "-MQ", "-I", "-L", "-D", "-U", "-isystem", "-idirafter",
    "-iquote", "-Xassembler", "-Xpreprocessor", "-Xoffload-linker", "-l",
}
# Options that stop a build from being a plain compile-and-link of sources.
NOT_A_LINK = {"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only", "-emit-llvm", "-###", "-x", "-v"}


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


def key_of(compiler, args, root, out):
    """What the build's result depends on: the compiler, the arguments
    with the run's folder taken out, the working directory likewise, and
    the content of every argument that names a file (but `out`)."""
    h = hashlib.sha256()
    norm = (lambda s: s.replace(root, "@ROOT@")) if root else (lambda s: s)
    for part in [compiler, norm(os.getcwd())] + [norm(a) for a in args]:
        h.update(part.encode() + b"\0")
    for arg in args:
        # `-I dir`, `-L dir` are folders; -Wl,... and flags are not files.
        if arg != out and os.path.isfile(arg):
            with open(arg, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def split(args, out):
    """A build of exactly one source file into a linked `out`: the index
    of the source in `args` and the compile-only command (`-c`, no `-o`,
    no link-only flag); None for any other build."""
    if any(a in NOT_A_LINK or a.startswith("-x") for a in args):
        return None
    sources = [i for i, a in enumerate(args)
               if a.endswith(SOURCE_SUFFIXES) and not a.startswith("-")
               and (i == 0 or args[i - 1] not in SEPARATE_VALUE) and os.path.isfile(a)]
    if len(sources) != 1:
        return None
    compile_args, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a in ("-o", "-L", "-l", "-Xlinker"):
            skip = True  # the option and its value
            continue
        if (a.startswith(("-L", "-l", "-Wl,")) or a == "-o" + out
                or a in ("-shared", "-static", "-rdynamic", "-pie", "-no-pie")):
            continue
        compile_args.append(a)
    if out in compile_args:
        return None
    # A flag only the link reads (-fno-openmp-implicit-rpath, say) would
    # warn that the compile did not use it; the link step still gets it.
    return sources[0], compile_args + ["-c", "-Wno-unused-command-line-argument"]


def store(cache, entry, files, stdout=b"", stderr=b""):
    """Keep `files` (name -> path) and the streams as `entry` of the cache,
    written beside it and renamed into place: a parallel lit job sees a
    whole entry or none."""
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=cache, prefix=".new-")
    for name, path in files.items():
        shutil.copy2(path, os.path.join(tmp, name))
    with open(os.path.join(tmp, "stdout"), "wb") as f:
        f.write(stdout)
    with open(os.path.join(tmp, "stderr"), "wb") as f:
        f.write(stderr)
    try:
        os.rename(tmp, entry)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another job stored it first


def object_of(compiler, root, cache, plan):
    """The cached object of the source `plan` names, compiled now if this
    invocation has not compiled it yet; None if the compile failed or
    printed anything."""
    source, compile_args = plan
    entry = os.path.join(cache, "obj-" + key_of(compiler, compile_args, root, None))
    obj = os.path.join(entry, "output.o")
    if os.path.isfile(obj):
        return obj
    os.makedirs(cache, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".obj-", suffix=".o")
    os.close(fd)
    try:
        done = subprocess.run([compiler] + compile_args + ["-o", tmp],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if done.returncode != 0 or done.stdout or done.stderr:
            return None
        store(cache, entry, {"output.o": tmp})
    finally:
        os.remove(tmp)
    return obj if os.path.isfile(obj) else None


def build(compiler, args, out, root, cache):
    """Build `out` as `compiler args` would, in two steps where it can
    (see the module's comment); the finished run."""
    plan = split(args, out)
    if plan is not None:
        obj = object_of(compiler, root, cache, plan)
        if obj is not None:
            link = list(args)
            link[plan[0]] = obj
            done = subprocess.run([compiler] + link, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if done.returncode == 0 and not done.stdout and not done.stderr:
                return done
    return subprocess.run([compiler] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def main():
    compiler, args = sys.argv[1], sys.argv[2:]
    cache = os.environ.get("LIT_CC_CACHE_DIR")
    out = output_of(args)
    root = os.environ.get("LIT_CC_CACHE_ROOT", "")
    names_root = root and any(root in a for a in args if a != out)
    if not cache or out is None or names_root:
        os.execv(compiler, [compiler] + args)
    entry = os.path.join(cache, key_of(compiler, args, root, out))
    if os.path.isdir(entry):
        shutil.copyfile(os.path.join(entry, "output"), out)
        shutil.copymode(os.path.join(entry, "output"), out)
        for stream, name in ((sys.stdout, "stdout"), (sys.stderr, "stderr")):
            with open(os.path.join(entry, name), "rb") as f:
                stream.buffer.write(f.read())
        return 0
    done = build(compiler, args, out, root, cache)
    sys.stdout.buffer.write(done.stdout)
    sys.stderr.buffer.write(done.stderr)
    if done.returncode == 0 and os.path.isfile(out):
        store(cache, entry, {"output": out}, done.stdout, done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
