//! The destructors of device images: per device and image, whether the
//! teardown ran them (through `unload_binary`), or why not.
//!
//! A plugin runs an image's global constructors when it loads the image
//! and its destructors when it unloads it: the host plugin dlopens an
//! image, so the loader runs its `.init_array` at `load_binary` and its
//! `.fini_array` at `unload_binary` (dlclose); LLVM's plugins-nextgen call
//! `callGlobalConstructors`/`callGlobalDestructors` there too, and so does
//! our CUDA plugin: an nvptx image has no `.fini_array` but a kernel
//! `nvptx$device$fini` calling its `__fini_array_object_*` functions. So the
//! destructors of every image still loaded at shutdown run in the
//! teardown's step 3 (unload images), before `deinit_device`, and never
//! after: an image that is not unloaded (a partial teardown at exit, a
//! dead plugin, a failed or missing `unload_binary`) is listed as *not
//! run*, with the reason. Clang 14's destructor entries (`declare target`
//! `DTOR` flags) are kernels the OpenMP layer runs at unregistration,
//! before the teardown; the image lists how many it has.
use crate::abi::{self, declare_target};
use std::fmt;

/// The destructors of one image loaded on a device at shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageDtors {
    /// Runtime-wide number of the device the image was loaded on.
    pub device: usize,
    /// File name of the plugin library serving the device.
    pub plugin: String,
    /// Address of the image's `__tgt_device_image`.
    pub image: usize,
    /// Size of the image, in bytes.
    pub size: usize,
    /// Entries of its ELF `.fini_array` (the destructors the loader runs at
    /// dlclose, the C runtime's `__do_global_dtors_aux` included); `None`
    /// when the image is not an ELF object or has no `.fini_array`.
    pub fini_array: Option<usize>,
    /// Device destructors of an nvptx image (a cubin with the kernel
    /// `nvptx$device$fini`): its `__fini_array_object_*` functions, which
    /// the CUDA plugin runs at `unload_binary`; `None` for other images.
    pub device_fini: Option<usize>,
    /// Entries flagged as destructors (clang 14's `DTOR` kernels, run by
    /// the OpenMP layer at unregistration, not by the unload).
    pub dtor_entries: usize,
    /// How those kernels went, when the OpenMP layer ran them; `None`:
    /// not run (the binary was never unregistered, or its constructors
    /// never ran on this device).
    pub dtor_kernels: Option<DtorKernels>,
    /// Whether the unload ran them.
    pub outcome: DtorsOutcome,
}

/// The destructor kernels of an image the OpenMP layer ran at its
/// unregistration (before the teardown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DtorKernels {
    /// Kernels that ran and succeeded.
    pub ran: usize,
    /// Kernels that failed (LLVM only prints this as debug output).
    pub failed: usize,
}

/// Whether an image's destructors ran in the teardown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DtorsOutcome {
    /// `unload_binary` succeeded. A plugin that dlopens the image (ours
    /// for the host) ran its `.fini_array` there (dlclose); a GPU plugin
    /// (LLVM's plugins-nextgen, our CUDA plugin) ran the image's device
    /// destructors kernel, and fails the unload if it failed. So the line
    /// says "destructors run" for an image with a `.fini_array` or device
    /// destructors; of any other image, only that it was unloaded.
    RunByUnload,
    /// Not run by the teardown (the reason); the image stays loaded until
    /// the process ends.
    NotRun(String),
}

impl ImageDtors {
    /// What the teardown knows of `image`'s destructors, before its
    /// unload.
    ///
    /// # Safety
    /// `image` is a valid `__tgt_device_image` whose bytes and entries are
    /// alive for this call.
    pub(crate) unsafe fn of(
        device: usize,
        plugin: &str,
        image: *const abi::DeviceImage,
        dtor_kernels: Option<DtorKernels>,
        outcome: DtorsOutcome,
    ) -> ImageDtors {
        // SAFETY: our `# Safety`.
        let desc = unsafe { &*image };
        let size = (desc.image_end as usize).saturating_sub(desc.image_start as usize);
        let bytes: &[u8] = if desc.image_start.is_null() || size == 0 {
            &[]
        } else {
            // SAFETY: `image_start..image_end` are the image's live bytes.
            unsafe { std::slice::from_raw_parts(desc.image_start as *const u8, size) }
        };
        let entries = (desc.entries_end as usize).saturating_sub(desc.entries_begin as usize)
            / std::mem::size_of::<abi::OffloadEntry>();
        let dtor_entries = if desc.entries_begin.is_null() || entries == 0 {
            0
        } else {
            // SAFETY: the entry range is the image's live entry table.
            unsafe { std::slice::from_raw_parts(desc.entries_begin, entries) }
                .iter()
                .filter(|e| e.flags & declare_target::DTOR != 0)
                .count()
        };
        ImageDtors {
            device,
            plugin: plugin.to_owned(),
            image: image as usize,
            size,
            fini_array: fini_array_entries(bytes),
            device_fini: device_fini_functions(bytes),
            dtor_entries,
            dtor_kernels,
            outcome,
        }
    }
}

/// The number of pointers in the `.fini_array` of the ELF object `elf`.
pub(crate) fn fini_array_entries(elf: &[u8]) -> Option<usize> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).ok()?;
    let section = file.section_by_name(".fini_array")?;
    let pointer = if file.is_64() { 8 } else { 4 };
    usize::try_from(section.size()).ok().map(|s| s / pointer)
}

/// The kernel LLVM's `nvptx-lower-ctor-dtor` pass makes to call an nvptx
/// image's destructors.
pub(crate) const NVPTX_FINI_KERNEL: &str = "nvptx$device$fini";
/// The prefix of the globals holding those destructors' addresses.
pub(crate) const NVPTX_FINI_OBJECT: &str = "__fini_array_object_";

/// The device destructors of the cubin `elf`: how many
/// `__fini_array_object_*` globals it has, if it has the kernel that
/// calls them; `None` for an image without that kernel or not an ELF.
pub(crate) fn device_fini_functions(elf: &[u8]) -> Option<usize> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(elf).ok()?;
    let mut kernel = false;
    let mut functions = 0;
    for name in file.symbols().filter_map(|s| s.name().ok()) {
        kernel |= name == NVPTX_FINI_KERNEL;
        functions += usize::from(name.starts_with(NVPTX_FINI_OBJECT));
    }
    kernel.then_some(functions)
}

impl fmt::Display for ImageDtors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "device {} ({}): image {:#x} ({} bytes",
            self.device, self.plugin, self.image, self.size
        )?;
        match self.fini_array {
            Some(n) => write!(f, ", {n} .fini_array entries")?,
            None => write!(f, ", no .fini_array")?,
        }
        if let Some(n) = self.device_fini {
            write!(f, ", {n} device destructors ({NVPTX_FINI_KERNEL})")?;
        }
        match (self.dtor_entries, self.dtor_kernels) {
            (0, None) => {}
            (n, None) => write!(f, ", {n} dtor entries, not run at unregistration")?,
            (n, Some(k)) => write!(
                f,
                ", {n} dtor entries: {} run at unregistration, {} failed",
                k.ran, k.failed
            )?,
        }
        match &self.outcome {
            DtorsOutcome::RunByUnload
                if self.fini_array.is_some() || self.device_fini.is_some() =>
            {
                write!(f, "): destructors run by unload_binary")
            }
            DtorsOutcome::RunByUnload => write!(
                f,
                "): unloaded; no .fini_array, any other destructors are the plugin's to run"
            ),
            DtorsOutcome::NotRun(why) => write!(f, "): destructors NOT run: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_object_has_a_fini_array_and_junk_has_none() {
        // The test binary itself is an ELF object with a `.fini_array`.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(fini_array_entries(&exe).is_some_and(|n| n >= 1));
        assert_eq!(fini_array_entries(b"not an elf"), None);
    }

    #[test]
    fn an_nvptx_image_counts_the_destructors_its_fini_kernel_calls() {
        use omptarget_test_support::cuda::{cubin, Sym};
        let p = &[0u8; 8];
        let with_kernel = cubin(
            90,
            &[
                Sym::Function("nvptx$device$fini"),
                Sym::Object("__fini_array_object_a_1_101", p),
                Sym::Object("__fini_array_object_b_1_65535", p),
                Sym::Object("__init_array_object_c_1_65535", p),
            ],
        );
        assert_eq!(device_fini_functions(&with_kernel), Some(2));
        // Objects without the kernel are never called: none.
        let without = cubin(90, &[Sym::Object("__fini_array_object_a_1_101", p)]);
        assert_eq!(device_fini_functions(&without), None);
        assert_eq!(device_fini_functions(b"junk"), None);
    }

    #[test]
    fn the_line_says_what_ran_or_why_not() {
        let mut dtors = ImageDtors {
            device: 0,
            plugin: "libomptarget.rtl.x86_64.so".into(),
            image: 0x1000,
            size: 64,
            fini_array: Some(2),
            device_fini: None,
            dtor_entries: 0,
            dtor_kernels: None,
            outcome: DtorsOutcome::RunByUnload,
        };
        assert_eq!(
            dtors.to_string(),
            "device 0 (libomptarget.rtl.x86_64.so): image 0x1000 (64 bytes, 2 .fini_array entries): destructors run by unload_binary"
        );
        dtors.fini_array = None;
        assert!(dtors.to_string().ends_with(
            "(64 bytes, no .fini_array): unloaded; no .fini_array, any other destructors are the plugin's to run"
        ));
        dtors.device_fini = Some(3);
        assert!(dtors.to_string().ends_with(
            "(64 bytes, no .fini_array, 3 device destructors (nvptx$device$fini)): destructors run by unload_binary"
        ));
        dtors.device_fini = None;
        dtors.dtor_entries = 1;
        dtors.outcome = DtorsOutcome::NotRun("in use at exit: a kernel".into());
        assert_eq!(
            dtors.to_string(),
            "device 0 (libomptarget.rtl.x86_64.so): image 0x1000 (64 bytes, no .fini_array, 1 dtor entries, not run at unregistration): destructors NOT run: in use at exit: a kernel"
        );
        dtors.dtor_kernels = Some(DtorKernels { ran: 1, failed: 0 });
        assert!(dtors
            .to_string()
            .contains(", 1 dtor entries: 1 run at unregistration, 0 failed): "));
    }
}
