//! `KernelArgsTy`: the argument block of `__tgt_target_kernel` (LLVM 16+).
//!
//! Every version starts with the same two words, [`KernelArgsHeader`]; read
//! that first, then reinterpret the block as the version it names.

use core::ffi::c_void;

/// `OMP_KERNEL_ARG_VERSION` values.
pub const KERNEL_ARGS_V1: u32 = 1;
pub const KERNEL_ARGS_V2: u32 = 2;
pub const KERNEL_ARGS_V3: u32 = 3;

/// The leading words common to every version.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgsHeader {
    pub version: u32,
    pub num_args: u32,
}

/// Version 1 (LLVM 16).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgsV1 {
    pub version: u32,
    pub num_args: u32,
    pub arg_base_ptrs: *mut *mut c_void,
    pub arg_ptrs: *mut *mut c_void,
    pub arg_sizes: *mut i64,
    pub arg_types: *mut i64,
    pub arg_names: *mut *mut c_void,
    pub arg_mappers: *mut *mut c_void,
    pub tripcount: u64,
}

/// The `Flags` bit field of versions 2 and 3 (`NoWait : 1`, then `IsCUDA : 1`
/// from version 3 on).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelFlags(pub u64);

impl KernelFlags {
    pub const fn no_wait(self) -> bool {
        self.0 & 1 != 0
    }
    pub const fn is_cuda(self) -> bool {
        self.0 & 2 != 0
    }
}

/// Version 2 (LLVM 17-18).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgsV2 {
    pub version: u32,
    pub num_args: u32,
    pub arg_base_ptrs: *mut *mut c_void,
    pub arg_ptrs: *mut *mut c_void,
    pub arg_sizes: *mut i64,
    pub arg_types: *mut i64,
    pub arg_names: *mut *mut c_void,
    pub arg_mappers: *mut *mut c_void,
    pub tripcount: u64,
    pub flags: KernelFlags,
    pub num_teams: [u32; 3],
    pub thread_limit: [u32; 3],
    pub dyn_cgroup_mem: u32,
}

/// Version 3 (LLVM 19+): the layout of version 2 with more flag bits.
pub type KernelArgsV3 = KernelArgsV2;
