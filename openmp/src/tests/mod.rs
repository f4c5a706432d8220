//! The OpenMP layer's tests over host-memory test devices (see
//! [`crate::testkit`]): registration and device numbering, data
//! begin/end/update, target regions, mappers, private arguments, the
//! `omp_target_*` API, and the exact stderr text and fatal errors of
//! failures. One module per topic; this one holds what they share.

use crate::testkit::*;
use crate::*;
use omptarget::abi::{declare_target, map_type as mt, requires, AllocKind, TargetNonContig};
use std::ffi::{c_void, CString};
use std::ptr::null;

mod api;
mod data;
mod golden;
mod images;
mod info;
mod load;
mod mapper;
mod ompt;
mod region;
mod registration;
mod threads;
mod update;
mod usm;
mod zero_length;

const TAG_A: &[u8] = b"image-a";
const TAG_B: &[u8] = b"image-b";

/// A world with one plugin of `devices` devices and a registered binary
/// with one kernel.
fn one_kernel_world(devices: usize) -> (World, TestBinary) {
    let w = World::mandatory(&[(TAG_A, devices)]);
    let bin = TestBinary::new(&[TAG_A], &[HostItem::Kernel { flags: 0 }]);
    // SAFETY: `bin` owns a valid descriptor and the arrays it points to, alive and unchanged
    // for as long as the runtime uses them in this test.
    unsafe { w.off().register_lib(bin.desc()) };
    (w, bin)
}

fn hex(p: *const c_void) -> String {
    format!("0x{:016x}", p as usize)
}

const CONSULT: &str =
    "Libomptarget error: Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.\n";
const NO_SOURCE: &str = "Libomptarget error: Source location information not present. Compile with -g or -gline-tables-only.\n";
const MANDATORY: &str = "failure of target construct while offloading is mandatory";
