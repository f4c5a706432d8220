//! The release of a loaded object linked against the plain
//! `libomptarget.so`, from the evidence in its file.
//!
//! A binary linked against this runtime's own folder links the unversioned
//! `libomptarget.so` whatever clang built it, so that name tells nothing.
//! The file does, in two ways, read in this order:
//!
//! 1. **Its offload entry table's section**, written by the clang that
//!    linked it (the one whose registration code runs): clang 20+ name it
//!    `llvm_offload_entries`; clang 14 to 19 `omp_offloading_entries`, and
//!    clang 15+ embed the device image in a `.llvm.offloading` section
//!    beside it, which clang 14 does not. Objects of another clang linked
//!    in (a static library) change neither.
//! 2. Without entries (data regions and API calls only), **the compiler
//!    identification**: every clang writes `clang version N.M.P` into the
//!    `.comment` section of each object it compiles (`strip` keeps it);
//!    the newest clang named wins.
//!
//! The file is found by the address range the object is loaded at
//! (`/proc/self/maps` names the file mapped there, also for the main
//! program started through `ld.so` and for a library dlopen'd by a
//! relative path after a `chdir`), else by the loader's name for it (for
//! the main program: `/proc/self/exe`, then the path it was started by). Only
//! the headers and the few sections needed are read (`pread` through
//! object's `ReadCache`: a file shortened meanwhile is an error, not a
//! SIGBUS), and the file is taken only if its program headers are the
//! loaded object's byte for byte. All of it runs after `dl_iterate_phdr`
//! has returned, holding no loader lock.

use object::elf::{FileHeader64, ProgramHeader64};
use object::read::elf::{FileHeader, SectionHeader};
use object::read::ReadCache;
use object::Endianness;
use omptarget_openmp::Release;
use std::ffi::CStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// A loaded object, as `dl_iterate_phdr` described it. It is on the
/// caller's stack (a return address lies in it), so it stays loaded.
pub(super) struct Loaded<'a> {
    /// The loader's name for its file (`dlpi_name`; empty for the main
    /// program).
    pub(super) name: &'a CStr,
    /// The lowest address it is loaded at.
    pub(super) start: usize,
    /// Its program headers, as loaded.
    pub(super) headers: &'a [libc::Elf64_Phdr],
}

/// The release `object`'s file shows; `None` when the file cannot be
/// found or read, is not the loaded object, or shows nothing.
pub(super) fn release_of(object: &Loaded<'_>) -> Option<Release> {
    candidate_paths(object).find_map(|path| {
        let file = std::fs::File::open(&path).ok()?;
        release_of_file(&ReadCache::new(file), object.headers)
    })
}

/// Where the object's file may be: the file mapped at its start, then
/// the loader's name; for the main program (no name) the executable, as
/// `/proc/self/exe` and as the path it was started by (`AT_EXECFN`, for a
/// process without `/proc`).
fn candidate_paths(object: &Loaded<'_>) -> impl Iterator<Item = PathBuf> {
    let named: Vec<PathBuf> = if object.name.is_empty() {
        // SAFETY: `getauxval` has no precondition; AT_EXECFN, when present,
        // is the address of a NUL-terminated string the kernel put on the
        // initial stack, alive for the whole process.
        let execfn = unsafe { libc::getauxval(libc::AT_EXECFN) } as *const libc::c_char;
        let mut paths = vec![PathBuf::from("/proc/self/exe")];
        if !execfn.is_null() {
            // SAFETY: as above.
            let execfn = unsafe { CStr::from_ptr(execfn) };
            paths.push(PathBuf::from(std::ffi::OsStr::from_bytes(
                execfn.to_bytes(),
            )));
        }
        paths
    } else {
        vec![PathBuf::from(std::ffi::OsStr::from_bytes(
            object.name.to_bytes(),
        ))]
    };
    mapped_path(object.start).into_iter().chain(named)
}

/// The file `/proc/self/maps` shows mapped at `address`.
fn mapped_path(address: usize) -> Option<PathBuf> {
    let mut maps = String::new();
    std::fs::File::open("/proc/self/maps")
        .ok()?
        .read_to_string(&mut maps)
        .ok()?;
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode path
        let mut fields = line.splitn(6, ' ');
        let (start, end) = fields.next()?.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        if !(start..end).contains(&address) {
            return None;
        }
        let path = fields.nth(4)?.trim_start();
        // Not a file: "[heap]", "", or a file deleted since it was mapped.
        (path.starts_with('/') && !path.ends_with(" (deleted)")).then(|| path.into())
    })
}

/// The release the ELF file `data` shows, if its program headers are
/// `loaded`.
fn release_of_file<'data, R: object::ReadRef<'data>>(
    data: R,
    loaded: &[libc::Elf64_Phdr],
) -> Option<Release> {
    let header = FileHeader64::<Endianness>::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let headers = header.program_headers(endian, data).ok()?;
    if !same_headers(headers, loaded) {
        return None;
    }
    let sections = header.sections(endian, data).ok()?;
    let has = |name: &[u8]| sections.section_by_name(endian, name).is_some();
    if has(b"llvm_offload_entries") {
        return Some(Release::Llvm22);
    }
    let embeds_image = has(b".llvm.offloading");
    if has(b"omp_offloading_entries") {
        return Some(if embeds_image {
            Release::Llvm19
        } else {
            Release::Llvm14
        });
    }
    sections
        .section_by_name(endian, b".comment")
        .and_then(|(_, comment)| comment.data(endian, data).ok())
        .and_then(Release::from_compiler_comment)
        // An embedded image with no clang named: clang 15+ (docs/releases.md
        // says which release is assumed).
        .or(embeds_image.then_some(Release::Llvm19))
}

/// Whether the file's program headers are the loaded ones, byte for byte.
fn same_headers(file: &[ProgramHeader64<Endianness>], loaded: &[libc::Elf64_Phdr]) -> bool {
    // SAFETY: both are arrays of the 56-byte `Elf64_Phdr` layout (object's
    // type is `repr(C)` over byte arrays), readable for their whole length.
    let (file, loaded) = unsafe {
        (
            std::slice::from_raw_parts(file.as_ptr().cast::<u8>(), std::mem::size_of_val(file)),
            std::slice::from_raw_parts(loaded.as_ptr().cast::<u8>(), std::mem::size_of_val(loaded)),
        )
    };
    file == loaded
}
