//! `KernelArgsTy`: the argument block of `__tgt_target_kernel` (LLVM 16+).
//!
//! Every version starts with the same two words, [`KernelArgsHeader`]; read
//! that first, then reinterpret the block as the version it names.
//!
//! What compilers store (checked by `tests/abi_layout.rs`): clang 14 emits no
//! block at all (it calls the legacy `__tgt_target_*_mapper` entries);
//! clang 16 stores version 2; clang 19 and 22 store version 3. Versions 2
//! and 3 share one 104-byte layout.

use core::ffi::c_void;

/// `OMP_KERNEL_ARG_VERSION` 1: the block is a [`KernelArgsV1`].
pub const KERNEL_ARGS_V1: u32 = 1;
/// `OMP_KERNEL_ARG_VERSION` 2: the block is a [`KernelArgsV2`].
pub const KERNEL_ARGS_V2: u32 = 2;
/// `OMP_KERNEL_ARG_VERSION` 3: the block is a [`KernelArgsV3`].
pub const KERNEL_ARGS_V3: u32 = 3;

/// The leading words common to every version.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgsHeader {
    /// `Version`: which layout the rest of the block has.
    pub version: u32,
    /// `NumArgs`: number of entries in each argument array.
    pub num_args: u32,
}

/// Version 1, from LLVM 16's development. No released clang checked here
/// emits it (clang 16 already stores 2), so only the fields up to
/// `tripcount` are assumed; LLVM's own runtime upgrades it to version 2.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgsV1 {
    /// `Version`: 1.
    pub version: u32,
    /// `NumArgs`: number of entries in each argument array.
    pub num_args: u32,
    /// `ArgBasePtrs`: base address of each mapped argument.
    pub arg_base_ptrs: *mut *mut c_void,
    /// `ArgPtrs`: begin address of each mapped section.
    pub arg_ptrs: *mut *mut c_void,
    /// `ArgSizes`: size in bytes of each mapped section.
    pub arg_sizes: *mut i64,
    /// `ArgTypes`: map-type flags of each argument ([`crate::map_type`]).
    pub arg_types: *mut i64,
    /// `ArgNames`: source-location name of each argument, or null.
    pub arg_names: *mut *mut c_void,
    /// `ArgMappers`: user-defined mapper of each argument, or null.
    pub arg_mappers: *mut *mut c_void,
    /// `Tripcount`: loop trip count hint, 0 when unknown.
    pub tripcount: u64,
}

/// The `Flags` bit field of versions 2 and 3 (`NoWait : 1`, then `IsCUDA : 1`
/// from version 3 on).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelFlags(pub u64);

impl KernelFlags {
    /// `NoWait`: the launch carries a `nowait` clause.
    pub const fn no_wait(self) -> bool {
        self.0 & 1 != 0
    }
    /// `IsCUDA`: the launch comes from CUDA rather than OpenMP (version 3).
    pub const fn is_cuda(self) -> bool {
        self.0 & 2 != 0
    }
}

/// Version 2 (clang 16-18): the full layout, 104 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelArgsV2 {
    /// `Version`: 2 or 3.
    pub version: u32,
    /// `NumArgs`: number of entries in each argument array.
    pub num_args: u32,
    /// `ArgBasePtrs`: base address of each mapped argument.
    pub arg_base_ptrs: *mut *mut c_void,
    /// `ArgPtrs`: begin address of each mapped section.
    pub arg_ptrs: *mut *mut c_void,
    /// `ArgSizes`: size in bytes of each mapped section.
    pub arg_sizes: *mut i64,
    /// `ArgTypes`: map-type flags of each argument ([`crate::map_type`]).
    pub arg_types: *mut i64,
    /// `ArgNames`: source-location name of each argument, or null.
    pub arg_names: *mut *mut c_void,
    /// `ArgMappers`: user-defined mapper of each argument, or null.
    pub arg_mappers: *mut *mut c_void,
    /// `Tripcount`: loop trip count hint, 0 when unknown.
    pub tripcount: u64,
    /// `Flags`: the `nowait` / CUDA bits.
    pub flags: KernelFlags,
    /// `NumTeams`: requested teams per dimension (0: the runtime's choice).
    pub num_teams: [u32; 3],
    /// `ThreadLimit`: threads per team per dimension (0: the runtime's choice).
    pub thread_limit: [u32; 3],
    /// `DynCGroupMem`: bytes of dynamic group (shared) memory requested.
    pub dyn_cgroup_mem: u32,
}

/// Version 3 (clang 19+; checked: 19 and 22): the layout of version 2.
///
/// What changed is the kernel signature: device kernels of a version-3
/// binary take a leading `void *dyn_ptr` parameter before the mapped
/// arguments (version 1 and 2 kernels do not), so whoever launches them must
/// pass it (null when no dynamic group memory is requested).
pub type KernelArgsV3 = KernelArgsV2;
