//! Offload entries, device images, binary descriptors and target tables.

use core::ffi::{c_char, c_void};

/// `__tgt_offload_entry` as emitted by clang up to LLVM 19 (32 bytes; checked
/// against clang 14, 16 and 19), in section `omp_offloading_entries`.
///
/// This is also the layout of the target table that LLVM 14 plugins return
/// from `__tgt_rtl_load_binary`, whatever layout the binary itself used.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadEntryV1 {
    /// Host address of the function stub or global (host tables), or the
    /// device address (target tables).
    pub addr: *mut c_void,
    /// NUL-terminated symbol name.
    pub name: *mut c_char,
    /// Size in bytes of a global; 0 for a function.
    pub size: usize,
    /// `declare_target` flags.
    pub flags: i32,
    /// Reserved for the runtime.
    pub reserved: i32,
}

/// `__tgt_offload_entry` as emitted by clang from LLVM 20 on (56 bytes;
/// checked against clang 22), in section `llvm_offload_entries`. For OpenMP
/// clang stores `version` 1, `kind` 1, and zero `data` and `aux_addr`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OffloadEntryV2 {
    /// Always 0: distinguishes this layout from [`OffloadEntryV1`], whose
    /// first word is a non-null address.
    pub reserved: u64,
    /// Entry layout version (1).
    pub version: u16,
    /// The offload kind (OpenMP = 1, CUDA, HIP ...).
    pub kind: u16,
    /// `declare_target` flags.
    pub flags: u32,
    /// Host address of the function stub or global (V1's `addr`).
    pub address: *mut c_void,
    /// NUL-terminated symbol name (V1's `name`).
    pub symbol_name: *mut c_char,
    /// Size in bytes of a global; 0 for a function.
    pub size: u64,
    /// Kind-specific extra word (0 for OpenMP).
    pub data: u64,
    /// Kind-specific auxiliary address (null for OpenMP).
    pub aux_addr: *mut c_void,
}

/// The entry layout used by the runtime and LLVM 14's plugin ABI.
pub type OffloadEntry = OffloadEntryV1;

/// `__tgt_device_image`: one device image embedded in a host binary.
///
/// `image_start..image_end` is the device ELF itself (clang 19+ embed it 144
/// bytes into an offload-binary blob, but point past the header). The entry
/// pointers are the host entries; with clang 20+ they point at
/// [`OffloadEntryV2`] records despite the pointer type (the first word, 0
/// there and a non-null address in V1, tells them apart). The device image's
/// own entry section lists no `declare target link` variables, so host and
/// device entries must be matched by name, never by index.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage {
    /// First byte of the device image (`ImageStart`).
    pub image_start: *mut c_void,
    /// One past the last byte of the device image (`ImageEnd`).
    pub image_end: *mut c_void,
    /// First host offload entry of this image (`EntriesBegin`).
    pub entries_begin: *mut OffloadEntry,
    /// One past the last host offload entry (`EntriesEnd`).
    pub entries_end: *mut OffloadEntry,
}

/// `__tgt_bin_desc`: what a host binary passes to `__tgt_register_lib`
/// (`host_entries_*` hold [`OffloadEntryV2`] records with clang 20+; see
/// [`DeviceImage`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct BinDesc {
    /// Number of elements in `device_images` (`NumDeviceImages`).
    pub num_device_images: i32,
    /// Array of the binary's device images (`DeviceImages`).
    pub device_images: *mut DeviceImage,
    /// First host offload entry of the whole binary (`HostEntriesBegin`).
    pub host_entries_begin: *mut OffloadEntry,
    /// One past the last host offload entry (`HostEntriesEnd`).
    pub host_entries_end: *mut OffloadEntry,
}

/// `__tgt_target_table`: the entries of an image as loaded on a device.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TargetTable {
    /// First device entry, in the image's order (`EntriesBegin`).
    pub entries_begin: *mut OffloadEntry,
    /// One past the last device entry (`EntriesEnd`).
    pub entries_end: *mut OffloadEntry,
}

/// `__tgt_async_info`: a plugin's queue handle (a CUstream for CUDA).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AsyncInfo {
    /// The plugin's opaque queue (`Queue`); null until the plugin sets one.
    pub queue: *mut c_void,
}

/// `__tgt_target_non_contig`: one dimension of a non-contiguous update.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetNonContig {
    /// Offset of the first element, in elements of this dimension (`Offset`).
    pub offset: u64,
    /// Number of elements transferred in this dimension (`Count`).
    pub count: u64,
    /// Distance in bytes between consecutive elements (`Stride`).
    pub stride: u64,
}

/// `__tgt_device_info`: native context and device handles.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceInfo {
    /// The native context handle (a CUcontext for CUDA) (`Context`).
    pub context: *mut c_void,
    /// The native device handle (a CUdevice for CUDA) (`Device`).
    pub device: *mut c_void,
}

impl DeviceImage {
    /// The image bytes' length, or `None` if the bounds are reversed.
    pub fn len(&self) -> Option<usize> {
        (self.image_end as usize).checked_sub(self.image_start as usize)
    }

    /// True when the image holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}
