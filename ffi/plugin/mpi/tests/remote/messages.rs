//! Requests and replies longer than the receive posted for them: a
//! request's first `REQUEST_SLOT` bytes (64 KiB and a little) and a
//! reply's first `REPLY_SLOT` (1 KiB) land in the receive posted ahead;
//! the rest follows on the request's reply tag. The test programs the
//! other modules run have small images (about 16 KiB) and few entries,
//! so neither rest is sent there.
//!
//! The first test's program, generated for the purpose, has a 256 KiB table in its
//! device image (its `LoadBinary` request is four slots long) and 200
//! kernels (the reply, one address per entry, is about 1.6 KiB). It runs
//! on two remote devices, so the second load names the image shipped by
//! the first, and its results are checked against sums computed here.
use crate::job;
use crate::lifecycle::{build_source, describe, lib_path};
use omptarget_test_support::exec::Exit;
use std::fmt::Write as _;

const TABLE: usize = 64 * 1024;
const KERNELS: usize = 200;

/// The table's `i`th value: spread over the whole `u32` range, so that a
/// misplaced or lost fragment changes the sum.
fn value(i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) ^ 0x5bd1_e995
}

fn source() -> String {
    let mut c = String::from("#include <omp.h>\n#include <stdio.h>\n#pragma omp declare target\n");
    write!(c, "static const unsigned table[{TABLE}] = {{").unwrap();
    for i in 0..TABLE {
        write!(c, "{}u,", value(i)).unwrap();
        if i % 16 == 15 {
            c.push('\n');
        }
    }
    c.push_str("};\n#pragma omp end declare target\n");
    // Each kernel reads one entry of the table, at its own index.
    for k in 0..KERNELS {
        writeln!(
            c,
            "static unsigned long k{k}(int dev) {{ unsigned long r = 0;\n\
             #pragma omp target device(dev) map(from: r)\n\
             r = table[{}] + {k}ul;\n return r; }}",
            k * 97 % TABLE
        )
        .unwrap();
    }
    c.push_str(
        "int main(void) {\n  int n = omp_get_num_devices();\n  printf(\"devices: %d\\n\", n);\n\
         for (int dev = 0; dev < n; dev++) {\n    unsigned long sum = 0;\n\
         #pragma omp target device(dev) map(tofrom: sum)\n\
         for (int i = 0; i < ",
    );
    write!(c, "{TABLE}").unwrap();
    c.push_str("; i++) sum += table[i];\n    unsigned long kernels = 0;\n");
    for k in 0..KERNELS {
        writeln!(c, "    kernels += k{k}(dev);").unwrap();
    }
    c.push_str("    printf(\"device %d: sum %lu kernels %lu\\n\", dev, sum, kernels);\n  }\n  return 0;\n}\n");
    c
}

fn expected(devices: usize) -> String {
    let sum: u64 = (0..TABLE).map(|i| u64::from(value(i))).sum();
    let kernels: u64 = (0..KERNELS)
        .map(|k| u64::from(value(k * 97 % TABLE)) + k as u64)
        .sum();
    let mut out = format!("devices: {devices}\n");
    for dev in 0..devices {
        writeln!(out, "device {dev}: sum {sum} kernels {kernels}").unwrap();
    }
    out
}

#[test]
fn long_requests_and_replies_arrive_whole() {
    let dir = omptarget_test_support::paths::omptarget_dir().join("mpi-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join(format!("long_messages.{}.c", std::process::id()));
    std::fs::write(&c, source()).unwrap();
    let binary = build_source(
        &c,
        &format!("long_messages.{}", std::process::id()),
        false,
        &[],
    );
    let image = std::fs::metadata(&binary).unwrap().len();
    assert!(
        image > 256 * 1024,
        "the image holds the table: {image} bytes"
    );

    let cmd = job::remote_only_job(&binary, &[], &[], &lib_path(), 1, 2);
    let out = job::run(cmd);
    let _ = std::fs::remove_file(&c);
    let _ = std::fs::remove_file(&binary);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(out.stdout, expected(2), "{}", describe(&out));
}

/// Copies gathered and sent together: 40 arrays of 12 KiB mapped `to` in
/// one region (480 KiB of one-way copies: several `SubmitInline`
/// messages, each sent when the next copy would not fit, the last before
/// the launch), then copied back by one region's data end, inside the
/// reply for 4 arrays (16 KiB in all) and as messages of their own for
/// 40 (480 KiB). Every value is checked on the host.
#[test]
fn gathered_copies_and_copies_back_keep_every_byte_in_place() {
    gathered_copies_under(job::Family::OpenMpi);
}

/// Copies both ways, inside replies and as messages of their own, under
/// MPICH (its `int` handles, its status layout and count).
#[test]
fn gathered_copies_and_copies_back_keep_every_byte_in_place_under_mpich() {
    gathered_copies_under(job::Family::Mpich);
}

fn gathered_copies_under(family: job::Family) {
    const ARRAYS: usize = 40;
    const INTS: usize = 3 * 1024;
    let mut c = String::from("#include <omp.h>\n#include <stdio.h>\n");
    for a in 0..ARRAYS {
        writeln!(c, "static int a{a}[{INTS}];").unwrap();
    }
    let list = |n: usize| {
        (0..n)
            .map(|a| format!("a{a}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    c.push_str("int main(void) {\n  int dev = omp_get_num_devices() - 1;\n");
    for a in 0..ARRAYS {
        writeln!(
            c,
            "  for (int i = 0; i < {INTS}; i++) a{a}[i] = i * {} + {a};",
            a + 1
        )
        .unwrap();
    }
    // The device adds each array's index to every element of the first
    // 4 (copied back inside the reply), then of all 40.
    for (n, what) in [(4, "few"), (ARRAYS, "all")] {
        writeln!(
            c,
            "#pragma omp target device(dev) map(tofrom: {})\n  {{",
            list(n)
        )
        .unwrap();
        for a in 0..n {
            writeln!(c, "    for (int i = 0; i < {INTS}; i++) a{a}[i] += {a};").unwrap();
        }
        c.push_str("  }\n");
        writeln!(c, "  long {what} = 0;").unwrap();
        for a in 0..ARRAYS {
            writeln!(c, "  for (int i = 0; i < {INTS}; i++) {what} += a{a}[i];").unwrap();
        }
        writeln!(c, "  printf(\"{what} %ld\\n\", {what});").unwrap();
    }
    c.push_str("  return 0;\n}\n");

    let base = |a: usize| -> i64 {
        (0..INTS as i64)
            .map(|i| i * (a as i64 + 1) + a as i64)
            .sum()
    };
    let added = |a: usize| -> i64 { INTS as i64 * a as i64 };
    let few: i64 = (0..ARRAYS).map(base).sum::<i64>() + (0..4).map(added).sum::<i64>();
    let all: i64 = few + (0..ARRAYS).map(added).sum::<i64>();

    let dir = omptarget_test_support::paths::omptarget_dir().join("mpi-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("gathered.{family:?}.{}", std::process::id());
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, c).unwrap();
    let binary = build_source(&source, &name, false, &[]);
    let out = job::run(job::remote_only_job_under(
        family,
        &binary,
        &[],
        &[],
        &lib_path(),
        1,
        1,
    ));
    let _ = std::fs::remove_file(&source);
    let _ = std::fs::remove_file(&binary);
    assert_eq!(out.exit, Some(Exit::Code(0)), "{}", describe(&out));
    assert_eq!(
        out.stdout,
        format!("few {few}\nall {all}\n"),
        "{}",
        describe(&out)
    );
}
