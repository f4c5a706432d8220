//! One device image loaded on one host device: a private copy of the
//! image, the dlopen handle, and the target table the plugin returns.
//!
//! Each load dlopens its own copy of the image, so every device (and every
//! load) gets its own copy of the image's globals. The copy is an anonymous
//! memfd by default ([`super::image_memfd`]: no directory needed, nothing
//! on disk). Where that fails, or where the settings ask for files
//! (`OMPTARGET_HOST_IMAGE_DIR`, `OMPTARGET_HOST_KEEP_IMAGE_FILES`), it is a
//! file ([`super::image_file`]): names are unique within the process (pid,
//! a sequence number, random letters; glibc recognises an already-loaded
//! library by its path first), so the file can be removed right after
//! dlopen: the mapping keeps its inode alive, and nothing is left on disk
//! even if the process never unloads the image (LLVM 14's runtime never
//! does) or dies. With `keep_file` (for debuggers and profilers that read
//! symbols from the path) the file stays until the image is unloaded:
//! dlclose, then remove.
//!
//! An OpenMP runtime an image brings in (a `-fopenmp` kernel built by GCC
//! needs libgomp, one built by clang libomp) stays loaded for the process
//! ([`pin_openmp_runtimes`]): its thread pool outlives the parallel region
//! that started it, and unloading the library under those threads when the
//! image is unloaded crashed the process.

use super::elf::{self, EntriesSection};
use super::image_file::ImageFile;
use libloading::os::unix::Library;
use omptarget_abi::{device_entry, OffloadEntry, TargetTable};
use omptarget_plugin_kit::backend::ImageRef;
use omptarget_plugin_kit::error::{PluginError, Result};
// B-tree collections, not hash ones: see `crate::memory` (no thread-locals
// in a plugin).
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_void, CStr, CString};
use std::ops::Range;
use std::path::Path;

/// Where a load's private copy of the image lives; see the module docs.
#[derive(Debug, Clone, Copy)]
pub struct ImageStorage<'a> {
    /// Try a memfd first.
    pub memfd: bool,
    /// Directory for files (the fallback, or the only way without `memfd`).
    pub dir: &'a Path,
    /// Keep a file until the image is unloaded.
    pub keep_file: bool,
}

use std::ptr::NonNull;

/// The dlopen flags of a load: `RTLD_LOCAL`, and `RTLD_LAZY` unless
/// `bind_now`.
///
/// `RTLD_LAZY` by default, as LLVM's host plugins load (14:
/// `dlopen(tmp_name, RTLD_LAZY)` in
/// `plugins/generic-elf-64bit/src/rtl.cpp`; 19 and 22:
/// `llvm::sys::DynamicLibrary`, whose `dlopen` is `RTLD_LAZY |
/// RTLD_GLOBAL`): a function the image references is bound at its first
/// call, so an image that references a function it never calls (one that
/// exists nowhere, or only in a library loaded later) loads and runs, on
/// ours as on LLVM's. Images built by clang call into libomp (`__kmpc_*`),
/// found through their own NEEDED/RUNPATH either way.
///
/// `RTLD_NOW` for `bind_now` (`load_flags::BIND_NOW`, which the Rust API's
/// `Image::load` asks for): every reference is bound before `dlopen`
/// returns, and one that cannot be fails the load with the loader's
/// `undefined symbol: NAME` instead of ending the process at the first
/// launch that reaches it. It is the one load: the loader binds before it
/// runs the image's constructors, so a refused image runs none and leaves
/// nothing loaded (checking afterwards would mean loading twice, or
/// constructors run for an image then refused).
fn dlopen_flags(bind_now: bool) -> i32 {
    let binding = if bind_now {
        libc::RTLD_NOW
    } else {
        libc::RTLD_LAZY
    };
    binding | libc::RTLD_LOCAL
}

/// A loaded image; see the module docs. Dropping it unloads it, ignoring
/// errors; [`LoadedImage::unload`] reports them.
pub struct LoadedImage {
    /// The `__tgt_device_image` address the runtime loaded it from.
    key: usize,
    /// Closed before `file` is removed.
    library: Option<Library>,
    /// Loaded from a memfd (no file ever existed).
    from_memory: bool,
    file: Option<ImageFile>,
    /// The table handed to the runtime; points into `entries`.
    table: Box<TargetTable>,
    /// Device entries; their `name`s point into `names`.
    entries: Box<[OffloadEntry]>,
    names: Box<[CString]>,
    /// Addresses of the function entries (kernels).
    kernels: BTreeSet<usize>,
    /// The image's read-only address ranges, as loaded
    /// ([`elf::read_only_ranges`]): copies into them are refused.
    read_only: Vec<Range<usize>>,
}

// SAFETY: the raw pointers inside (`table`, `entries`) point into this
// value's own heap blocks and into the loaded library, neither of which is
// tied to a thread.
unsafe impl Send for LoadedImage {}
// SAFETY: through `&LoadedImage` nothing changes: every `&self` method reads
// fields that are written only while building it, and the heap blocks the
// raw pointers point into are only read after. The device's `ReadMostly`
// lets launches of several threads read the list at once; loads and unloads
// (which move or drop images) take its write side.
unsafe impl Sync for LoadedImage {}

impl LoadedImage {
    /// Load a private copy of `image` (see [`ImageStorage`]), resolve
    /// every host entry by name and build the target table. A file is
    /// removed once loaded unless `storage.keep_file`. Symbols the image
    /// references are bound at their first use (`RTLD_LAZY`, as LLVM's
    /// host plugins load); with `bind_now` all of them are bound now
    /// (`RTLD_NOW`), and an image with one the loader cannot find is
    /// refused (`undefined symbol: NAME`) before any of its constructors
    /// runs.
    pub fn load(image: &ImageRef<'_>, storage: ImageStorage<'_>, bind_now: bool) -> Result<Self> {
        elf::check_image(image.bytes).map_err(PluginError::InvalidImage)?;
        let section = elf::entries_section(image.bytes).map_err(PluginError::InvalidImage)?;
        let read_only = elf::read_only_ranges(image.bytes).map_err(PluginError::InvalidImage)?;
        let names = host_entry_names(image.entries)?;

        let (library, file) = open_copy(image.bytes, storage, dlopen_flags(bind_now))?;
        pin_openmp_runtimes();
        let (library, base) = load_base(library);

        let mut loaded = Self {
            key: image.desc.as_ptr() as usize,
            library: Some(library),
            from_memory: file.is_none(),
            file,
            table: Box::new(TargetTable {
                entries_begin: std::ptr::null_mut(),
                entries_end: std::ptr::null_mut(),
            }),
            entries: Box::new([]),
            names: names.into_boxed_slice(),
            kernels: BTreeSet::new(),
            read_only: Vec::new(),
        };
        // On error `loaded` is dropped: dlclose, then the file is removed.
        if !storage.keep_file {
            if let Some(mut file) = loaded.file.take() {
                file.remove()?;
            }
        }
        let base = base?;
        loaded.read_only = read_only
            .into_iter()
            .map(|r| base.wrapping_add(r.start as usize)..base.wrapping_add(r.end as usize))
            .collect();
        // SAFETY: `image.bytes` is the file just loaded at `base`, which is
        // relocated (dlopen returned) and whose kernels have not been handed
        // out yet; `read_only` are its ranges as loaded.
        unsafe { crate::exit_hook::redirect_exit(image.bytes, base, &loaded.read_only)? };
        loaded.resolve(image.entries, base, section)?;
        Ok(loaded)
    }

    /// Fill `entries`, `kernels` and `table` from the host entries.
    fn resolve(
        &mut self,
        host: &[OffloadEntry],
        base: usize,
        section: Option<EntriesSection>,
    ) -> Result<()> {
        let library = self
            .library
            .as_ref()
            .expect("resolve runs on a loaded image");
        let device_table = match section {
            Some(section) => device_entries(base, section)?,
            None => BTreeMap::new(),
        };
        let mut entries = Vec::with_capacity(host.len());
        for (entry, name) in host.iter().zip(self.names.iter()) {
            let addr = match device_table.get(name.as_c_str()) {
                Some(&addr) => addr,
                None => lookup_symbol(library, name)?,
            };
            // The bit is this plugin's to set, whatever the host entry said.
            let mut flags = entry.flags & !device_entry::READ_ONLY;
            if entry.size == 0 {
                self.kernels.insert(addr as usize);
            } else if self.overlaps_read_only(addr as usize, entry.size) {
                flags |= device_entry::READ_ONLY;
            }
            entries.push(OffloadEntry {
                addr,
                name: name.as_ptr().cast_mut(),
                size: entry.size,
                flags,
                reserved: 0,
            });
        }
        self.entries = entries.into_boxed_slice();
        let range = self.entries.as_mut_ptr_range();
        self.table.entries_begin = range.start;
        self.table.entries_end = range.end;
        Ok(())
    }

    /// The `__tgt_device_image` address this image was loaded from.
    pub fn key(&self) -> usize {
        self.key
    }

    /// The target table; valid until this image is unloaded or dropped.
    pub fn table(&self) -> NonNull<TargetTable> {
        NonNull::from(&*self.table)
    }

    /// Whether `addr` is one of this image's kernels.
    pub fn has_kernel(&self, addr: *mut c_void) -> bool {
        self.kernels.contains(&(addr as usize))
    }

    /// Whether any of the `len` bytes at `start` lies in a read-only part
    /// of this image (a copy there would fault).
    pub fn overlaps_read_only(&self, start: usize, len: usize) -> bool {
        let end = start.saturating_add(len);
        self.read_only
            .iter()
            .any(|r| start < r.end && r.start < end)
    }

    /// Whether the image was loaded from a memfd rather than a file.
    pub fn from_memory(&self) -> bool {
        self.from_memory
    }

    /// Path of the private image file, if it is kept while loaded.
    pub fn file_path(&self) -> Option<&Path> {
        self.file.as_ref().and_then(ImageFile::path)
    }

    /// dlclose the image, then remove its file (if it has one).
    pub fn unload(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        let closed = match self.library.take() {
            Some(library) => library.close().map_err(|e| {
                PluginError::backend(format!("dlclose of a device image failed: {e}"))
            }),
            None => Ok(()),
        };
        let removed = match self.file.take() {
            Some(mut file) => file.remove(),
            None => Ok(()),
        };
        closed.and(removed)
    }
}

impl Drop for LoadedImage {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// The sonames of the OpenMP runtimes a kernel may need: GCC's, LLVM's (and
/// its older name), Intel's.
const OPENMP_RUNTIMES: [&CStr; 4] = [
    c"libgomp.so.1",
    c"libomp.so.5",
    c"libomp.so",
    c"libiomp5.so",
];

/// Make every OpenMP runtime that is loaded now stay loaded for the
/// process (glibc's `RTLD_NODELETE` on a library already loaded, through
/// `RTLD_NOLOAD`, which loads nothing). The pool threads of a runtime that
/// an image's `-fopenmp` code started keep running its code after the
/// region ends; an image unload that unloaded the runtime with them would
/// crash them. A runtime the program itself links is loaded for good
/// anyway; this covers the one only an image needs.
pub fn pin_openmp_runtimes() {
    for name in OPENMP_RUNTIMES {
        // SAFETY: RTLD_NOLOAD loads nothing (no initialiser runs); a
        // non-null handle is a reference of ours, given back at once, and
        // RTLD_NODELETE keeps the library loaded after that.
        unsafe {
            let handle = libc::dlopen(
                name.as_ptr(),
                libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            );
            if !handle.is_null() {
                libc::dlclose(handle);
            }
        }
    }
}

/// dlopen (with `flags`) a private copy of `bytes`: from a memfd if
/// `storage` allows and that works, else from a new file in `storage.dir`
/// (returned, still on disk). The error names every way that failed. A
/// symbol the loader could not bind fails the same from a file, so that
/// refusal is returned without trying one.
fn open_copy(
    bytes: &[u8],
    storage: ImageStorage<'_>,
    flags: i32,
) -> Result<(Library, Option<ImageFile>)> {
    let memfd_error = if storage.memfd {
        match super::image_memfd::load(bytes, flags) {
            Ok(library) => return Ok((library, None)),
            Err(e) if is_unbound_symbol(&e) => {
                return Err(PluginError::backend(format!(
                    "cannot load the device image: {e}"
                )))
            }
            Err(e) => Some(e),
        }
    } else {
        None
    };
    match open_file_copy(bytes, storage.dir, flags) {
        Ok((library, file)) => Ok((library, Some(file))),
        Err(file_error) => Err(PluginError::backend(match memfd_error {
            Some(memfd_error) => format!(
                "cannot load the device image from memory ({memfd_error}) nor from a file ({file_error})"
            ),
            None => format!("cannot load the device image: {file_error}"),
        })),
    }
}

/// Whether a dlopen error is the loader refusing to bind a symbol the
/// object references (glibc's `undefined symbol: NAME`, for a data
/// reference, or any reference under `RTLD_NOW`): the object itself is at
/// fault, not where its copy lives.
fn is_unbound_symbol(error: &str) -> bool {
    error.contains(": undefined symbol: ")
}

/// dlopen (with `flags`) a copy of `bytes` written to a new file in `dir`.
fn open_file_copy(
    bytes: &[u8],
    dir: &Path,
    flags: i32,
) -> std::result::Result<(Library, ImageFile), String> {
    let file = ImageFile::create(dir, bytes).map_err(|e| e.to_string())?;
    let path = file.path().expect("a new image file has a path");
    // SAFETY: loading runs the image's initialisers; running the offload
    // program's code is this plugin's purpose.
    let library = unsafe { Library::open(Some(path), flags) }
        .map_err(|e| format!("dlopen of {} failed: {e}", path.display()))?;
    Ok((library, file))
}

/// Copy the host entries' names (they name the device symbols).
fn host_entry_names(entries: &[OffloadEntry]) -> Result<Vec<CString>> {
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            if entry.name.is_null() {
                return Err(PluginError::InvalidImage(format!(
                    "host entry {i} has a null name"
                )));
            }
            // SAFETY: a non-null entry name is a NUL-terminated string in
            // the host binary (ABI of `__tgt_offload_entry`).
            Ok(unsafe { CStr::from_ptr(entry.name) }.to_owned())
        })
        .collect()
}

/// The image's own offload entries, as loaded: name -> device address.
fn device_entries(base: usize, section: EntriesSection) -> Result<BTreeMap<CString, *mut c_void>> {
    let size = std::mem::size_of::<OffloadEntry>() as u64;
    if !section.size.is_multiple_of(size) {
        return Err(PluginError::InvalidImage(format!(
            "section omp_offloading_entries is {} bytes, not a multiple of {size}",
            section.size
        )));
    }
    let first = base.wrapping_add(section.addr as usize) as *const OffloadEntry;
    let mut table = BTreeMap::new();
    for i in 0..(section.size / size) as usize {
        // SAFETY: the section lies inside the loaded image (its address and
        // size come from the image's section headers, relocated by the
        // load base), and its relocations were applied by dlopen.
        let entry = unsafe { first.add(i).read_unaligned() };
        if entry.name.is_null() {
            continue;
        }
        // SAFETY: a relocated entry name points to a string in the image.
        let name = unsafe { CStr::from_ptr(entry.name) }.to_owned();
        table.insert(name, entry.addr);
    }
    Ok(table)
}

/// Take the load base (`l_addr`) of a dlopened library.
fn load_base(library: Library) -> (Library, Result<usize>) {
    let handle = library.into_raw();
    // SAFETY: `handle` came from `into_raw` just above and is turned back
    // into the one owning `Library`.
    let library = unsafe { Library::from_raw(handle) };
    let mut map: *mut c_void = std::ptr::null_mut();
    // SAFETY: `handle` is a live dlopen handle; RTLD_DI_LINKMAP stores a
    // `struct link_map *` into `map`.
    let rc = unsafe {
        libc::dlinfo(
            handle,
            libc::RTLD_DI_LINKMAP,
            (&mut map as *mut *mut c_void).cast(),
        )
    };
    if rc != 0 || map.is_null() {
        let error = PluginError::backend("dlinfo(RTLD_DI_LINKMAP) failed on a device image");
        return (library, Err(error));
    }
    // SAFETY: `l_addr` (ElfW(Addr)) is the first field of `struct link_map`.
    (library, Ok(unsafe { map.cast::<usize>().read() }))
}

/// Resolve `name` with dlsym.
fn lookup_symbol(library: &Library, name: &CStr) -> Result<*mut c_void> {
    // SAFETY: the symbol is only read as an address.
    let symbol = unsafe { library.get::<*mut c_void>(name.to_bytes_with_nul()) }.map_err(|e| {
        PluginError::InvalidImage(format!(
            "entry `{}` of the host table is not defined in the device image ({e})",
            name.to_string_lossy()
        ))
    })?;
    let addr = symbol.into_raw();
    if addr.is_null() {
        return Err(PluginError::InvalidImage(format!(
            "entry `{}` resolves to a null address",
            name.to_string_lossy()
        )));
    }
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where both ways fail, the error names both causes; with files
    /// forced, only the file's.
    #[test]
    fn a_copy_that_cannot_be_loaded_names_every_cause() {
        let dir = Path::new("/nonexistent/omptarget-images");
        let both = ImageStorage {
            memfd: true,
            dir,
            keep_file: false,
        };
        let flags = dlopen_flags(false);
        let err = open_copy(b"not an ELF file", both, flags)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("from memory (dlopen of /proc/self/fd/"),
            "{err}"
        );
        assert!(
            err.contains(
                "nor from a file (cannot create an image file in /nonexistent/omptarget-images"
            ),
            "{err}"
        );
        let files_only = ImageStorage {
            memfd: false,
            ..both
        };
        let err = open_copy(b"x", files_only, flags).unwrap_err().to_string();
        assert!(!err.contains("memory"), "{err}");
        assert!(err.contains("/nonexistent/omptarget-images"), "{err}");
    }
}
