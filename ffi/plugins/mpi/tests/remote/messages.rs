//! Requests and replies longer than the receive posted for them: a
//! request's first `REQUEST_SLOT` bytes (64 KiB and a little) and a
//! reply's first `REPLY_SLOT` (1 KiB) land in the receive posted ahead;
//! the rest follows on the request's reply tag. The test programs the
//! other modules run have small images (about 16 KiB) and few entries,
//! so neither rest is sent there.
//!
//! Here a program generated for the purpose has a 256 KiB table in its
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
