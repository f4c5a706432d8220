//! The clang that built a loaded object, from its file's `.comment`.
//!
//! A binary linked against this runtime's own folder links the unversioned
//! `libomptarget.so` whatever clang built it, so that name tells nothing.
//! The compiler identification does: every clang writes `clang version
//! N.M.P` into the `.comment` section of each object it compiles, and the
//! linker keeps one copy of each distinct string (`strip` keeps the
//! section too). The section is not loaded, so it is read from the
//! object's file, mapped read-only (no heap block), and only after
//! checking that the file is the object that is loaded: its program
//! headers and notes (the build ID) must match the loaded ones byte for
//! byte, so a file rebuilt or replaced since it was loaded is not taken
//! for it.

use object::elf::{FileHeader64, ProgramHeader64, PT_NOTE};
use object::read::elf::{FileHeader, ProgramHeader};
use object::Endianness;
use omptarget_openmp::Release;
use std::ffi::CStr;

/// A loaded object, as `dl_iterate_phdr` describes it.
pub(super) struct Loaded<'a> {
    /// Its file's path (`dlpi_name`; empty for the main program).
    pub(super) name: &'a CStr,
    /// Its load bias (`dlpi_addr`).
    pub(super) bias: usize,
    /// Its program headers, as loaded.
    pub(super) headers: &'a [libc::Elf64_Phdr],
}

/// The release of the clang that built `object`, else of the offload
/// sections it has; `None` when its file cannot be read, is not the loaded
/// object, or shows neither.
pub(super) fn release_of(object: &Loaded<'_>) -> Option<Release> {
    let path: &CStr = if object.name.is_empty() {
        c"/proc/self/exe"
    } else {
        object.name
    };
    let file = MappedFile::open(path)?;
    let data = file.bytes();
    let header = FileHeader64::<Endianness>::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let headers = header.program_headers(endian, data).ok()?;
    if !is_loaded_as(object, headers, endian, data) {
        return None;
    }
    let sections = header.sections(endian, data).ok()?;
    let named = |name: &[u8]| sections.section_by_name(endian, name).map(|(_, s)| s);
    named(b".comment")
        .and_then(|comment| object::read::elf::SectionHeader::data(comment, endian, data).ok())
        .and_then(Release::from_compiler_comment)
        .or_else(|| {
            // No clang named (`strip -R .comment`): where the offload
            // sections are. clang 20+ put the entries in
            // `llvm_offload_entries`, clang 15 to 19 in
            // `omp_offloading_entries` beside an embedded
            // `.llvm.offloading` image, clang 14 embeds no such image.
            // A clang-20+ binary without entries (data regions only) is
            // taken for LLVM 19's: docs/releases.md says so.
            if named(b"llvm_offload_entries").is_some() {
                Some(Release::Llvm22)
            } else if named(b".llvm.offloading").is_some() {
                Some(Release::Llvm19)
            } else {
                None
            }
        })
}

/// Whether the file's program headers and notes are the loaded object's.
fn is_loaded_as(
    object: &Loaded<'_>,
    file_headers: &[ProgramHeader64<Endianness>],
    endian: Endianness,
    data: &[u8],
) -> bool {
    if file_headers.len() != object.headers.len() {
        return false;
    }
    // SAFETY: both are arrays of the same 56-byte `Elf64_Phdr` layout
    // (object's type is `repr(C)` over unaligned-safe fields), so their
    // bytes can be compared as bytes.
    let (file_bytes, loaded_bytes) = unsafe {
        (
            std::slice::from_raw_parts(
                file_headers.as_ptr().cast::<u8>(),
                std::mem::size_of_val(file_headers),
            ),
            std::slice::from_raw_parts(
                object.headers.as_ptr().cast::<u8>(),
                std::mem::size_of_val(object.headers),
            ),
        )
    };
    if file_bytes != loaded_bytes {
        return false;
    }
    object
        .headers
        .iter()
        .zip(file_headers)
        .filter(|(loaded, _)| loaded.p_type == PT_NOTE)
        .all(|(loaded, file)| {
            let Ok(in_file) = file.data(endian, data) else {
                return false;
            };
            // SAFETY: a PT_NOTE segment lies inside a loaded PT_LOAD one
            // (the linker places notes in the first, read-only segment),
            // mapped while the object is loaded, `p_filesz` bytes long.
            let in_memory = unsafe {
                std::slice::from_raw_parts(
                    (object.bias + loaded.p_vaddr as usize) as *const u8,
                    loaded.p_filesz as usize,
                )
            };
            in_file == in_memory
        })
}

/// A whole file mapped read-only, unmapped when dropped.
struct MappedFile {
    at: *mut libc::c_void,
    len: usize,
}

impl MappedFile {
    fn open(path: &CStr) -> Option<MappedFile> {
        // SAFETY: `path` is NUL-terminated; the descriptor is closed below
        // (the mapping keeps the file alive without it).
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let at = map_whole(fd);
        // SAFETY: `fd` is ours, opened above; the mapping keeps the file.
        unsafe { libc::close(fd) };
        at.map(|(at, len)| MappedFile { at, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` readable bytes are mapped at `at` until `drop`.
        unsafe { std::slice::from_raw_parts(self.at.cast::<u8>(), self.len) }
    }
}

/// Map all of the open file `fd` read-only: its address and length.
fn map_whole(fd: libc::c_int) -> Option<(*mut libc::c_void, usize)> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `stat` is writable.
    if unsafe { libc::fstat(fd, &mut stat) } != 0 || stat.st_size <= 0 {
        return None;
    }
    let len = usize::try_from(stat.st_size).ok()?;
    // SAFETY: a fresh private read-only mapping of an open file; no Rust
    // reference aliases it.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            fd,
            0,
        )
    };
    (at != libc::MAP_FAILED).then_some((at, len))
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, no longer borrowed.
        unsafe { libc::munmap(self.at, self.len) };
    }
}
