//! The LLVM release whose behaviour a call follows.
//!
//! One runtime serves binaries of clang 14, 19 and 22. Where their own
//! runtimes behave differently for the same call, this one behaves as the
//! runtime of the release that built the calling binary (the shim tells,
//! through [`super::HostEnv::caller_release`], from the binary's own
//! evidence: the versioned `libomptarget` name it links, else the clang
//! its `.comment` names). Each difference is a method here, and
//! `docs/releases.md` lists them in one table (the Releases table).

use super::HostEnv;
use omptarget::mapping::ZeroLength;
use std::cell::Cell;

/// An LLVM release with its own libomptarget behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Release {
    /// LLVM 14 (binaries link `libomptarget.so`); also what a binary
    /// that shows no evidence of its release is taken for.
    #[default]
    Llvm14,
    /// LLVM 19 (`libomptarget.so.19.1`; also 15 to 19, which link
    /// `libomptarget.so.N[.1]` and share its launch ABI).
    Llvm19,
    /// LLVM 22 (`libomptarget.so.22.1`; also 20 and 21, whose 56-byte
    /// entries it shares).
    Llvm22,
}

/// What a binary's `DT_NEEDED` name of the runtime tells of its release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkedName {
    /// A release's own name (`libomptarget.so.19.1`).
    Versioned(Release),
    /// `libomptarget.so`: the binary itself must tell.
    Unversioned,
}

impl Release {
    /// The release a clang of this major version belongs to, for the
    /// runtime's behaviour: up to 14 LLVM 14's; 15 to 19 LLVM 19's (the
    /// kernel-argument launches, 32-byte entries); 20 and later LLVM 22's
    /// (56-byte entries).
    pub fn from_major(major: u32) -> Release {
        match major {
            0..=14 => Release::Llvm14,
            15..=19 => Release::Llvm19,
            _ => Release::Llvm22,
        }
    }

    /// What the name a binary links the runtime under (its `DT_NEEDED`)
    /// says: `libomptarget.so.N.1` is release N's own name, the
    /// unversioned `libomptarget.so` says nothing (clang 14 links it
    /// against LLVM 14, and every clang links it against this runtime's
    /// own folder). `None` when `name` is not libomptarget's.
    pub fn linked_name(name: &[u8]) -> Option<LinkedName> {
        let rest = name.strip_prefix(b"libomptarget.so")?;
        if rest.is_empty() {
            return Some(LinkedName::Unversioned);
        }
        let version = rest.strip_prefix(b".")?;
        let major: u32 = std::str::from_utf8(version)
            .ok()?
            .split('.')
            .next()?
            .parse()
            .ok()?;
        Some(LinkedName::Versioned(Release::from_major(major)))
    }

    /// The release of the clang named in an object's `.comment` section
    /// (NUL-separated compiler identifications, e.g. `Debian clang version
    /// 19.1.7 (3~deb12u1)` beside the C runtime's `GCC: ...`). With several
    /// clangs (objects of another clang linked in), the newest: the one
    /// that linked the binary wrote its offload registration. `None` when
    /// no clang is named.
    pub fn from_compiler_comment(comment: &[u8]) -> Option<Release> {
        const MARK: &[u8] = b"clang version ";
        comment
            .split(|&b| b == 0)
            .filter_map(|ident| {
                let at = ident.windows(MARK.len()).position(|w| w == MARK)?;
                let digits = &ident[at + MARK.len()..];
                let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
                std::str::from_utf8(&digits[..len])
                    .ok()?
                    .parse::<u32>()
                    .ok()
            })
            .max()
            .map(Release::from_major)
    }

    /// What every diagnostic line starts with: LLVM 14 prints
    /// `Libomptarget error: ...`, LLVM 19 and 22 `omptarget error: ...`.
    pub fn prefix(self) -> &'static str {
        match self {
            Release::Llvm14 => "Libomptarget",
            Release::Llvm19 | Release::Llvm22 => "omptarget",
        }
    }

    /// An unknown device number in a target construct or an `omp_*` call:
    /// LLVM 14 reports `Device N is not ready.` (and falls back or fails);
    /// LLVM 19 and 22 end the process with `omptarget fatal error N: Device
    /// number 'N' out of range, only M devices available` (the device
    /// number is the exit code).
    pub fn invalid_device_is_fatal(self) -> bool {
        self >= Release::Llvm19
    }

    /// With `OMP_TARGET_OFFLOAD=DISABLED`, LLVM 14 and 22 load no plugin
    /// (0 devices; the initial device is 0); LLVM 19 loads them anyway, so
    /// `omp_get_num_devices()` and `omp_get_initial_device()` count them.
    pub fn counts_devices_when_disabled(self) -> bool {
        self == Release::Llvm19
    }

    /// `use_device_ptr` of a pointer whose pointee is not mapped: LLVM 14
    /// and 19 give the region a null pointer, LLVM 22 the host address.
    pub fn unmapped_use_device_ptr_is_host_ptr(self) -> bool {
        self == Release::Llvm22
    }

    /// LLVM 22's `PluginManager::getDevice` loads a device's pending
    /// images (and so runs their global constructors) whenever any call
    /// looks the device up (`omp_get_mapped_ptr`, `omp_target_alloc`,
    /// ...); LLVM 14 and 19 only in a target construct or data directive.
    pub fn loads_images_on_device_lookup(self) -> bool {
        self == Release::Llvm22
    }

    /// The combined entry of a struct mapped from a member onward: LLVM 14
    /// pads its host section down to 8 bytes and maps the padding as data
    /// (the padding bytes are then present and copied); LLVM 19 and 22
    /// keep the host section as it is and allocate the padding on the
    /// device only, before the data (`TgtPadding`, of `begin % alignment`
    /// with the base's alignment up to 16: `partial_struct_alignment`).
    pub fn struct_padding_is_device_only(self) -> bool {
        self >= Release::Llvm19
    }

    /// First-private arguments packed into one buffer: LLVM 14 rounds each
    /// one's size up by `size % 8`; LLVM 19 and 22 align each one as its
    /// host address was aligned (up to 16), so that vector code the
    /// compiler wrote for an aligned array stays valid on the device.
    pub fn packs_first_private_aligned(self) -> bool {
        self >= Release::Llvm19
    }

    /// `requires` flags that disagree with the first registration's: LLVM
    /// 14 (`RTLsTy::RegisterRequires`) ends the process with fatal error 1
    /// and compares reverse_offload, unified_address and
    /// unified_shared_memory; LLVM 19's `RequirementCollection` (`Shared/
    /// Requirements.h`) with fatal error 2, and compares
    /// dynamic_allocators too.
    pub fn requires_mismatch(self) -> (i32, bool) {
        match self {
            Release::Llvm14 => (1, false),
            Release::Llvm19 | Release::Llvm22 => (2, true),
        }
    }

    /// How a zero-length section (`use_device_ptr(p)`, an implicitly
    /// captured pointer) is matched against the mappings: LLVM 14 as any
    /// section; LLVM 15+ also by the base of the mapping after it, so a
    /// pointer finds the section mapped through it (`map(p[64:128])`);
    /// LLVM 19 also by the base of the mapping before it, a test LLVM 22
    /// dropped (`lookupMapping`, `Size == 0`).
    pub fn zero_length_lookup(self) -> ZeroLength {
        match self {
            Release::Llvm14 => ZeroLength::Section,
            Release::Llvm19 => ZeroLength::ExtendedBelowBase,
            Release::Llvm22 => ZeroLength::Extended,
        }
    }

    /// A target region's argument that is neither mapped nor inside a
    /// mapping (an implicitly captured pointer to memory the table does not
    /// know, such as `omp_target_alloc`'s): LLVM 14's `getTgtPtrBegin`
    /// passes null; LLVM 19 and 22 the host value ("the pointer retains its
    /// original value", OpenMP 5.1 "Pointer Initialization for Device Data
    /// Environments").
    pub fn unmapped_argument_is_host_ptr(self) -> bool {
        self >= Release::Llvm19
    }

    /// A `to` map that finds its data mapped with a count of 1 (a second
    /// map of a struct in one construct, through a mapper) copies the host
    /// data again in LLVM 14 and 19, overwriting a device pointer attached
    /// in between with the host's value; LLVM 22 copies nothing when a
    /// pointer inside the section is attached (`getTargetPointer`'s
    /// `FailOnPtrFound`).
    pub fn new_map_keeps_attached_pointers(self) -> bool {
        self == Release::Llvm22
    }

    /// `LIBOMPTARGET_INFO` bit 0x40 (`OMP_INFOTYPE_EMPTY_MAPPING`): LLVM 19
    /// and 22 say `variable X does not have a valid device counterpart`
    /// for an explicit zero-length map (`use_device_ptr`/`_addr`) that
    /// found nothing; LLVM 14's runtime has no such message.
    pub fn reports_empty_mappings(self) -> bool {
        self >= Release::Llvm19
    }

    /// `LIBOMPTARGET_INFO` lines as LLVM 15+ print them, where LLVM 14's
    /// differ: "Creating new map entry" with `HstPtrBase` and
    /// `TgtAllocBegin`; a data end's "Mapping exists" after its final
    /// decrement, `(decremented, delayed deletion)`; the data regions'
    /// entry names (`with being_mapper`, ...); "Return HstPtrBegin ... for
    /// unified shared memory"; "table empty" for a device with no mapping
    /// in a table dump, and the dump at exit in reverse device order; a
    /// pointer attached by `PTR_AND_OBJ` named after the pointer's mapping.
    pub fn prints_info_since_llvm15(self) -> bool {
        self >= Release::Llvm19
    }

    /// The plugin's "Launching kernel" INFO line (bit 0x10): LLVM 14's host
    /// plugin prints none; LLVM 19's plugins print the block and thread
    /// counts, LLVM 22's each as three dimensions.
    pub fn kernel_launch_info(self) -> Option<LaunchInfo> {
        match self {
            Release::Llvm14 => None,
            Release::Llvm19 => Some(LaunchInfo::Counts),
            Release::Llvm22 => Some(LaunchInfo::Dimensions),
        }
    }

    /// A `declare target` global's mapping has a name: LLVM 15+ give it the
    /// symbol's (`HstPtrName` is the entry's name), LLVM 14 none (INFO and
    /// the table dumps say `unknown`). Ours always keeps the name and asks
    /// this when printing, so the line follows the printing caller.
    pub fn names_global_mappings(self) -> bool {
        self >= Release::Llvm19
    }

    /// Under `requires unified_shared_memory`, LLVM 15+ write each host
    /// global's bytes into its device global when an image is loaded (the
    /// device global is clang's reference to the host one); LLVM 14 leaves
    /// the reference null.
    pub fn writes_globals_for_usm(self) -> bool {
        self >= Release::Llvm19
    }
}

/// How a release's plugin words its "Launching kernel" INFO line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchInfo {
    /// LLVM 19: `with B blocks and T threads in Generic mode`.
    Counts,
    /// LLVM 22: `with [B,1,1] blocks and [T,1,1] threads in Generic mode`.
    Dimensions,
}

/// The caller's release, asked of the host at most once per C call and only
/// when a behaviour that differs needs it (the question walks the stack:
/// a region whose sections all have a length never asks).
pub(crate) struct CallerRelease<'a> {
    host: &'a dyn HostEnv,
    known: Cell<Option<Release>>,
}

impl<'a> CallerRelease<'a> {
    pub(crate) fn new(host: &'a dyn HostEnv) -> Self {
        CallerRelease {
            host,
            known: Cell::new(None),
        }
    }

    /// The release (asked now if not yet).
    pub(crate) fn get(&self) -> Release {
        if let Some(release) = self.known.get() {
            return release;
        }
        let release = self.host.caller_release();
        self.known.set(Some(release));
        release
    }

    /// The zero-length rule for a section of `size` bytes: a section with
    /// a length is matched alike by every release, so nothing is asked.
    pub(crate) fn zero_length(&self, size: i64) -> ZeroLength {
        if size != 0 {
            return ZeroLength::Section;
        }
        self.get().zero_length_lookup()
    }
}

#[cfg(test)]
mod tests {
    use super::Release;

    #[test]
    fn a_versioned_name_gives_the_release_and_the_plain_one_does_not() {
        use super::LinkedName::{Unversioned, Versioned};
        assert_eq!(Release::linked_name(b"libomptarget.so"), Some(Unversioned));
        assert_eq!(
            Release::linked_name(b"libomptarget.so.19.1"),
            Some(Versioned(Release::Llvm19))
        );
        assert_eq!(
            Release::linked_name(b"libomptarget.so.22.1"),
            Some(Versioned(Release::Llvm22))
        );
        assert_eq!(
            Release::linked_name(b"libomptarget.so.17"),
            Some(Versioned(Release::Llvm19))
        );
        assert_eq!(Release::linked_name(b"libomp.so.5"), None);
        assert_eq!(Release::linked_name(b"libomptarget.so.x"), None);
    }

    #[test]
    fn the_compiler_comment_gives_the_newest_clang_s_release() {
        let comment = |parts: &[&str]| parts.join("\0").into_bytes();
        let of = |parts: &[&str]| Release::from_compiler_comment(&comment(parts));
        assert_eq!(
            of(&[
                "GCC: (Debian 12.2.0-14+deb12u1) 12.2.0",
                "Debian clang version 14.0.6",
                ""
            ]),
            Some(Release::Llvm14)
        );
        assert_eq!(
            of(&[
                "GCC: (Debian 12.2.0-14) 12.2.0",
                "Debian clang version 19.1.7 (3~deb12u1)"
            ]),
            Some(Release::Llvm19)
        );
        assert_eq!(
            of(&["clang version 22.1.8 (1~deb12u1)"]),
            Some(Release::Llvm22)
        );
        assert_eq!(of(&["clang version 21.0.0git"]), Some(Release::Llvm22));
        assert_eq!(
            of(&[
                "Ubuntu clang version 14.0.0-1ubuntu1",
                "Debian clang version 19.1.7",
                "Linker: LLD 19.1.7"
            ]),
            Some(Release::Llvm19)
        );
        assert_eq!(of(&["GCC: (Debian 12.2.0-14) 12.2.0"]), None);
        assert_eq!(of(&["clang version x"]), None);
        assert_eq!(Release::from_compiler_comment(b""), None);
    }
}
