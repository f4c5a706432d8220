//! Map-type flags, requires flags, declare-target flags, allocation kinds
//! and the `LIBOMPTARGET_INFO` bits.

/// `tgt_map_type`: flags on each argument of a `__tgt_target_*` call.
pub mod map_type {
    /// No flag set.
    pub const NONE: i64 = 0x000;
    /// Copy host -> device.
    pub const TO: i64 = 0x001;
    /// Copy device -> host.
    pub const FROM: i64 = 0x002;
    /// Copy regardless of the reference count.
    pub const ALWAYS: i64 = 0x004;
    /// Force unmapping.
    pub const DELETE: i64 = 0x008;
    /// Map the pointer as well as the pointee.
    pub const PTR_AND_OBJ: i64 = 0x010;
    /// Pass the device base address to the kernel.
    pub const TARGET_PARAM: i64 = 0x020;
    /// Return the base device address of the mapped data.
    pub const RETURN_PARAM: i64 = 0x040;
    /// Private variable, not mapped.
    pub const PRIVATE: i64 = 0x080;
    /// Copy by value, not mapped.
    pub const LITERAL: i64 = 0x100;
    /// The mapping is implicit.
    pub const IMPLICIT: i64 = 0x200;
    /// `close` modifier.
    pub const CLOSE: i64 = 0x400;
    /// Runtime error if the data is not already present.
    pub const PRESENT: i64 = 0x1000;
    /// `ompx_hold`: a separate reference count that structured regions hold.
    pub const OMPX_HOLD: i64 = 0x2000;
    /// `ATTACH` (clang 22): not data to map but a pointer to attach. The
    /// base is the host address of a pointer, the begin its pointee's
    /// section; after the construct's other entries are mapped, if both
    /// are mapped, the device copy of the pointer is set to the device
    /// address of the pointee (clang 14 to 19 express this with
    /// `PTR_AND_OBJ` and `MEMBER_OF`).
    pub const ATTACH: i64 = 0x4000;
    /// Descriptor for a non-contiguous `target update`.
    pub const NON_CONTIG: i64 = 0x1000_0000_0000;
    /// Member of a struct: the parent's index plus one sits in the 16 MSBs.
    pub const MEMBER_OF: i64 = 0xffff_0000_0000_0000_u64 as i64;

    /// The parent index encoded in `MEMBER_OF`, if any (0-based).
    pub const fn member_of(map_type: i64) -> Option<usize> {
        let raw = ((map_type as u64) >> 48) as usize;
        if raw == 0 {
            None
        } else {
            Some(raw - 1)
        }
    }
}

/// `OpenMPOffloadingRequiresDirFlags`, passed to `__tgt_register_requires`.
pub mod requires {
    /// No `requires` information registered yet.
    pub const UNDEFINED: i64 = 0x000;
    /// Registered, without any `requires` clause.
    pub const NONE: i64 = 0x001;
    /// `requires reverse_offload`.
    pub const REVERSE_OFFLOAD: i64 = 0x002;
    /// `requires unified_address`.
    pub const UNIFIED_ADDRESS: i64 = 0x004;
    /// `requires unified_shared_memory`.
    pub const UNIFIED_SHARED_MEMORY: i64 = 0x008;
    /// `requires dynamic_allocators`.
    pub const DYNAMIC_ALLOCATORS: i64 = 0x010;
}

/// `OpenMPOffloadingDeclareTargetFlags`, in [`crate::OffloadEntry`] flags.
pub mod declare_target {
    /// `declare target link`: the device holds a pointer to the host variable.
    pub const LINK: i32 = 0x01;
    /// A global constructor to run on the device after loading.
    pub const CTOR: i32 = 0x02;
    /// A global destructor to run on the device before unloading.
    pub const DTOR: i32 = 0x04;
    /// `declare target indirect` (LLVM 17+): a function callable through a
    /// host function pointer on the device.
    pub const INDIRECT: i32 = 0x08;
    /// `OMP_REGISTER_REQUIRES` (LLVM 19+): not a symbol but the binary's
    /// `requires` flags, in the entry's `data` word (clang 19 stores them in
    /// the 32-byte entry's last word, clang 20+ in `data`); replaces the
    /// `__tgt_register_requires` call of older releases.
    pub const REGISTER_REQUIRES: i32 = 0x10;
    /// `OMP_DECLARE_TARGET_INDIRECT_VTABLE` (clang 22): a class's vtable
    /// (`size` its bytes) whose device symbol is not a copy of it but one
    /// pointer to the device's vtable, for GPU plugins' indirect-call
    /// tables. LLVM 22 maps the host vtable to itself and never writes it.
    pub const INDIRECT_VTABLE: i32 = 0x20;
}

/// Flags of this project's own in the target tables its plugins return
/// from `__tgt_rtl_load_binary` (never in a table clang emits: LLVM's
/// declare-target flags use the low bits, up to 0x20 in LLVM 22). A
/// runtime that does not know them (LLVM's) ignores them, as it ignores
/// every bit it does not test.
pub mod device_entry {
    /// The global lies in memory the device cannot write from the host: a
    /// host image's read-only segment (`const` data, `.rodata`) or its
    /// `PT_GNU_RELRO` part, write-protected once relocated. A copy to it is
    /// refused; the Rust API's `Global::write` refuses it first, with a
    /// typed error. A plugin that cannot tell never sets it.
    pub const READ_ONLY: i32 = 0x4000_0000;
}

/// `TargetAllocTy`: the `kind` argument of `__tgt_rtl_data_alloc`.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllocKind {
    /// `TARGET_ALLOC_DEVICE`: memory only the device accesses.
    Device = 0,
    /// `TARGET_ALLOC_HOST`: pinned host memory the device can access.
    Host = 1,
    /// `TARGET_ALLOC_SHARED`: memory that migrates between host and device.
    Shared = 2,
    /// `TARGET_ALLOC_DEFAULT`: the plugin's choice (device memory for mapped data).
    Default = 3,
}

impl AllocKind {
    /// Decode the raw `kind` argument; `None` for values no LLVM release uses.
    pub const fn from_raw(raw: i32) -> Option<Self> {
        match raw {
            0 => Some(Self::Device),
            1 => Some(Self::Host),
            2 => Some(Self::Shared),
            3 => Some(Self::Default),
            _ => None,
        }
    }
}

/// `OpenMPInfoType`: the bits of `LIBOMPTARGET_INFO` / `__tgt_set_info_flag`.
pub mod info_type {
    /// Kernel and data-region arguments on entry.
    pub const KERNEL_ARGS: u32 = 0x0001;
    /// A mapping already exists.
    pub const MAPPING_EXISTS: u32 = 0x0002;
    /// Dump the mapping tables after each region, on failure and at exit.
    pub const DUMP_TABLE: u32 = 0x0004;
    /// A mapping is created or removed.
    pub const MAPPING_CHANGED: u32 = 0x0008;
    /// Kernel information from a plugin.
    pub const PLUGIN_KERNEL: u32 = 0x0010;
    /// Data transfers.
    pub const DATA_TRANSFER: u32 = 0x0020;
    /// Every bit (`LIBOMPTARGET_INFO=-1`).
    pub const ALL: u32 = 0xffff_ffff;

    /// The bits a `LIBOMPTARGET_INFO` value stands for. The runtime and each
    /// plugin read the variable on their own (as LLVM's do), so the parse
    /// lives here, once, for all of them to agree.
    ///
    /// LLVM parses it with `std::stoi` and keeps the `int`'s bit pattern:
    /// leading C whitespace, an optional sign, decimal digits, anything
    /// after them ignored (`"6abc"` is 6, `"0x10"` is 0, `"-1"` every bit).
    /// Where `stoi` throws (no digits, or outside `int`) LLVM's process
    /// terminates; here such a value means 0, no info output.
    pub fn parse_level(value: &[u8]) -> u32 {
        let start = value
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
            .unwrap_or(value.len());
        let rest = &value[start..];
        let (negative, digits) = match rest.first() {
            Some(b'-') => (true, &rest[1..]),
            Some(b'+') => (false, &rest[1..]),
            _ => (false, rest),
        };
        let count = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        if count == 0 {
            return 0;
        }
        // Accumulate as a negative number so that i32::MIN fits.
        let mut acc: i32 = 0;
        for &digit in &digits[..count] {
            let Some(next) = acc
                .checked_mul(10)
                .and_then(|v| v.checked_sub(i32::from(digit - b'0')))
            else {
                return 0;
            };
            acc = next;
        }
        let value = if negative {
            Some(acc)
        } else {
            acc.checked_neg()
        };
        value.map_or(0, |v| v as u32)
    }
}
