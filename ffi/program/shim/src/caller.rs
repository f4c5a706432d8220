//! Which LLVM release built the binary that is calling the runtime.
//!
//! A call follows the behaviour of its caller's release (the
//! repository's `docs/releases.md`), and one process may mix them (a clang-14 program that
//! dlopens a clang-22 library). The C ABI passes no release, so it is read
//! off the caller's code: walk the stack (`_Unwind_Backtrace`, frames of
//! clang's binaries have unwind tables) to the first frame whose object
//! links a `libomptarget.so*` (its `DT_NEEDED`, read from the loaded
//! object's dynamic section); frames of this library, libomp, libgcc and
//! libc link none and are passed over. That object's release is a
//! property of the binary, not of the folder it was linked against:
//! a release's own name (`libomptarget.so.19.1`) gives it, and the plain
//! `libomptarget.so` (clang 14's name, and every clang's when it links
//! against this runtime's folder) leaves it to the object's file: its
//! offload entry table's section, else the clang its `.comment` names
//! ([`compiler`]); an object whose file shows neither is taken for LLVM
//! 14's (its name is LLVM 14's).
//!
//! Only calls whose behaviour differs between releases ask (error paths,
//! mostly, and LLVM 22's image loading on a device lookup), and a process
//! whose linking objects are all of one release is answered without a
//! walk ([`sole_release`]), so the walk costs nothing on the hot paths. Answers are cached
//! per object in a fixed table (no heap block stays alive at exit).
//! `dl_iterate_phdr` takes only glibc's short list lock, never the
//! dynamic loader's lock a constructor holds.

mod compiler;

use omptarget_openmp::{LinkedName, Release};
use std::cell::Cell;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

extern "C" {
    fn _Unwind_Backtrace(
        trace: extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

/// `Elf64_Dyn` (libc does not define it for glibc targets).
#[repr(C)]
#[derive(Clone, Copy)]
struct Dyn {
    d_tag: i64,
    d_val: u64,
}
const DT_NULL: i64 = 0;
const DT_NEEDED: i64 = 1;
const DT_STRTAB: i64 = 5;

/// Frames looked at, at most (ours are a few dozen deep at worst).
const MAX_FRAMES: usize = 96;
const URC_NO_REASON: c_int = 0;
const URC_END_OF_STACK: c_int = 5;

struct Frames {
    ips: [usize; MAX_FRAMES],
    len: usize,
}

extern "C" fn collect(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Frames` `calling_release` passes, alive and
    // not otherwise borrowed during the walk.
    let frames = unsafe { &mut *(arg as *mut Frames) };
    if frames.len == MAX_FRAMES {
        return URC_END_OF_STACK;
    }
    // SAFETY: `ctx` is the unwinder's context for this frame.
    frames.ips[frames.len] = unsafe { _Unwind_GetIP(ctx) };
    frames.len += 1;
    URC_NO_REASON
}

/// An object's release: `Some` if it links libomptarget.
#[derive(Clone, Copy)]
struct Object {
    /// `[start, end)` of its loaded segments.
    start: usize,
    end: usize,
    release: Option<Release>,
}

/// Objects looked up so far (a fixed table: no heap).
static CACHE: Mutex<([Option<Object>; 32], usize)> = Mutex::new(([None; 32], 0));

struct Lookup {
    ip: usize,
    found: Option<Found>,
}

/// What the walk of the loaded objects found: the object holding the
/// address, what its `DT_NEEDED` says, and where to read its file's
/// evidence when that is not enough (after the walk, holding no lock).
struct Found {
    start: usize,
    end: usize,
    linked: Option<LinkedName>,
    /// glibc's name of the object and its program headers: both in memory
    /// of the loader's or the object's, valid while the object is loaded,
    /// which it is (a return address on this thread's stack lies in it).
    name: *const libc::c_char,
    headers: *const libc::Elf64_Phdr,
    header_count: usize,
}

/// `dl_iterate_phdr` callback: the object whose loaded segments hold
/// `ip`, with what its `DT_NEEDED` says of its release.
unsafe extern "C" fn find_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the `Lookup` `object_of` passes; `info` is glibc's
    // description of one loaded object, valid during the callback.
    let (lookup, info) = unsafe { (&mut *(data as *mut Lookup), &*info) };
    let bias = info.dlpi_addr as usize;
    // SAFETY: glibc's program header array of `dlpi_phnum` entries.
    let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let (mut start, mut end, mut dynamic) = (usize::MAX, 0usize, None);
    for h in headers {
        if h.p_type == libc::PT_LOAD {
            start = start.min(bias + h.p_vaddr as usize);
            end = end.max(bias + (h.p_vaddr + h.p_memsz) as usize);
        } else if h.p_type == libc::PT_DYNAMIC {
            dynamic = Some(bias + h.p_vaddr as usize);
        }
    }
    if !(start..end).contains(&lookup.ip) {
        return 0;
    }
    lookup.found = Some(Found {
        start,
        end,
        // SAFETY: the object's dynamic section, mapped while it is loaded.
        linked: dynamic.and_then(|d| unsafe { linked_name(d as *const Dyn, bias) }),
        name: info.dlpi_name,
        headers: info.dlpi_phdr,
        header_count: headers.len(),
    });
    1
}

impl Found {
    /// The object's release: its versioned name's, else (a plain
    /// `libomptarget.so`) its file's evidence, else LLVM 14's (the
    /// release whose name it links). File I/O, so called after the walk,
    /// never inside `dl_iterate_phdr` (which holds glibc's lock that
    /// `dlopen` waits for).
    fn release(&self) -> Option<Release> {
        match self.linked? {
            LinkedName::Versioned(release) => Some(release),
            LinkedName::Unversioned => Some(
                compiler::release_of(&compiler::Loaded {
                    // SAFETY: glibc's NUL-terminated name and program
                    // headers of an object that stays loaded (`Found`).
                    name: unsafe { CStr::from_ptr(self.name) },
                    start: self.start,
                    // SAFETY: as above, `header_count` entries.
                    headers: unsafe { std::slice::from_raw_parts(self.headers, self.header_count) },
                })
                .unwrap_or_default(),
            ),
        }
    }
}

/// What the first `libomptarget.so*` in a dynamic section says.
///
/// # Safety
/// `dynamic` is a loaded object's `DT_NULL`-terminated dynamic section.
unsafe fn linked_name(dynamic: *const Dyn, bias: usize) -> Option<LinkedName> {
    let mut strtab = 0usize;
    let mut at = dynamic;
    // SAFETY: our `# Safety`: entries up to DT_NULL are readable.
    while unsafe { (*at).d_tag } != DT_NULL {
        // SAFETY: as above.
        let entry = unsafe { *at };
        if entry.d_tag == DT_STRTAB {
            strtab = entry.d_val as usize;
        }
        // SAFETY: still within the section (not past DT_NULL).
        at = unsafe { at.add(1) };
    }
    if strtab == 0 {
        return None;
    }
    // glibc relocates DT_STRTAB in place for most objects, not for all
    // (the vDSO); an unrelocated one lies below the load bias.
    if strtab < bias {
        strtab += bias;
    }
    let mut at = dynamic;
    // SAFETY: our `# Safety`, as above.
    while unsafe { (*at).d_tag } != DT_NULL {
        // SAFETY: as above.
        let entry = unsafe { *at };
        if entry.d_tag == DT_NEEDED {
            // SAFETY: a DT_NEEDED value is an offset into the loaded
            // string table, to a NUL-terminated name.
            let name = unsafe { CStr::from_ptr((strtab + entry.d_val as usize) as *const _) };
            if let Some(linked) = Release::linked_name(name.to_bytes()) {
                return Some(linked);
            }
        }
        // SAFETY: still within the section.
        at = unsafe { at.add(1) };
    }
    None
}

/// The loaded object holding `ip`, from the cache or `dl_iterate_phdr`.
fn object_of(ip: usize) -> Option<Object> {
    {
        let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = cache.0[..cache.1]
            .iter()
            .flatten()
            .find(|o| (o.start..o.end).contains(&ip))
        {
            return Some(*hit);
        }
    }
    let mut lookup = Lookup { ip, found: None };
    // SAFETY: `find_object` only reads glibc's object descriptions and
    // writes `lookup`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(find_object), &mut lookup as *mut Lookup as *mut c_void) };
    let found = lookup.found?;
    let found = Object {
        start: found.start,
        end: found.end,
        release: found.release(),
    };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    // Objects can be unloaded and their addresses reused: a full table
    // starts over rather than grow.
    if cache.1 == cache.0.len() {
        cache.1 = 0;
    }
    let slot = cache.1;
    cache.0[slot] = Some(found);
    cache.1 += 1;
    Some(found)
}

/// Forget cached objects (a library was unloaded: its addresses may be
/// reused by another).
pub(crate) fn forget_objects() {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.1 = 0;
}

thread_local! {
    /// The release a call made for another thread's caller follows (an
    /// `_async` call's helper task), while it runs; no destructor.
    static ON_BEHALF: Cell<Option<Release>> = const { Cell::new(None) };
}

/// Run `f` (work submitted by a caller of `release`, on a thread whose stack
/// has no frame of that caller) as that caller's call.
pub(crate) fn on_behalf_of<T>(release: Release, f: impl FnOnce() -> T) -> T {
    /// Restores the previous answer even when `f` unwinds.
    struct Restore(Option<Release>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON_BEHALF.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(ON_BEHALF.with(|c| c.replace(Some(release))));
    f()
}

/// The return addresses on this thread's stack, innermost first.
fn walk() -> Frames {
    let mut frames = Frames {
        ips: [0; MAX_FRAMES],
        len: 0,
    };
    // SAFETY: `collect` writes only into `frames`, which outlives the walk.
    unsafe { _Unwind_Backtrace(collect, &mut frames as *mut Frames as *mut c_void) };
    frames
}

/// The release named by the first frame whose object links libomptarget.
fn release_of(frames: &Frames) -> Release {
    frames.ips[..frames.len]
        .iter()
        // A return address points after the call; the call is before it.
        .filter_map(|&ip| object_of(ip.saturating_sub(1)))
        .find_map(|o| o.release)
        .unwrap_or_default()
}

/// The release of the binary whose code called into the runtime; LLVM 14
/// when no frame on the stack belongs to a binary linking libomptarget.
pub(crate) fn calling_release() -> Release {
    if let Some(release) = ON_BEHALF.with(Cell::get) {
        return release;
    }
    if let Some(release) = sole_release() {
        return release;
    }
    release_of(&walk())
}

/// What the loaded objects that link a `libomptarget.so*` say, as of one
/// state of the process's list of loaded objects, in one word so that the
/// common question (nothing loaded or unloaded since) is one atomic load:
/// glibc's counts of objects ever added to and removed from the list
/// (`dlpi_adds`, `dlpi_subs`; the census holds while both are equal), 28
/// bits each, and the answer in the low byte. 0 is "no census yet" (the
/// answer byte of a census is never 0). Counts past 28 bits are not
/// recorded: every question then counts again (correct, only slower).
static CENSUS: AtomicU64 = AtomicU64::new(0);

const COUNT_BITS: u32 = 28;
const NO_SOLE_RELEASE: u64 = 0xff;

/// The census word for these counts and answer; `None` if a count does not
/// fit.
fn census_word(adds: u64, subs: u64, sole: Option<Release>) -> Option<u64> {
    if adds >> COUNT_BITS != 0 || subs >> COUNT_BITS != 0 {
        return None;
    }
    let answer = match sole {
        None => NO_SOLE_RELEASE,
        Some(Release::Llvm14) => 1,
        Some(Release::Llvm19) => 2,
        Some(Release::Llvm22) => 3,
    };
    Some(adds << (COUNT_BITS + 8) | subs << 8 | answer)
}

/// The answer a census word records for these counts, if it does.
fn census_answer(word: u64, adds: u64, subs: u64) -> Option<Option<Release>> {
    if word == 0 || census_word(adds, subs, None)? >> 8 != word >> 8 {
        return None;
    }
    Some(match word & 0xff {
        1 => Some(Release::Llvm14),
        2 => Some(Release::Llvm19),
        3 => Some(Release::Llvm22),
        _ => None,
    })
}

/// The release of every caller, when the process holds only one: every
/// loaded object that links libomptarget is of that release (the common
/// case, a program and its libraries built by one clang). Then the stack
/// need not be walked: a walk (`_Unwind_Backtrace`, ~16,000 instructions)
/// on every `omp_target_alloc` while an image was pending made a program
/// that allocates 10,000 blocks spend most of its time there. `None` when
/// releases are mixed or no object links libomptarget: the walk decides.
/// Counted again whenever an object is loaded or unloaded.
fn sole_release() -> Option<Release> {
    let (adds, subs) = list_counts();
    if let Some(known) = census_answer(CENSUS.load(Relaxed), adds, subs) {
        return known;
    }
    // Counted holding no lock of ours (the count may read files): two
    // threads may count at once, and either's census is right for these
    // counts.
    let sole = count_releases();
    if let Some(word) = census_word(adds, subs, sole) {
        CENSUS.store(word, Relaxed);
    }
    sole
}

/// glibc's counts of objects added to and removed from the list of loaded
/// objects (the first object's `dl_phdr_info` carries them).
fn list_counts() -> (u64, u64) {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the pair `list_counts` passes; `info` is
        // glibc's description of an object, valid during the callback.
        let (counts, info) = unsafe { (&mut *(data as *mut (u64, u64)), &*info) };
        *counts = (info.dlpi_adds, info.dlpi_subs);
        1
    }
    let mut counts = (0u64, 0u64);
    // SAFETY: the callback only reads glibc's record and writes `counts`,
    // alive for the call.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut counts as *mut (u64, u64) as *mut c_void) };
    counts
}

/// Linking objects a census looks at, at most; a process with more is
/// answered by walks.
const MAX_LINKERS: usize = 32;
/// The longest object name and the most program headers a census copies;
/// an object with more is answered by walks.
const MAX_NAME: usize = 4096;
const MAX_HEADERS: usize = 32;

/// One loaded object that links libomptarget, copied out of glibc's record
/// inside the loader's callback: its name and program headers live only as
/// long as the object stays loaded, and another thread may unload it as
/// soon as the walk returns (its release is read after, holding no loader
/// lock, from these copies and the file they name).
struct Linker {
    linked: LinkedName,
    start: usize,
    name: [u8; MAX_NAME],
    name_len: usize,
    headers: [libc::Elf64_Phdr; MAX_HEADERS],
    header_count: usize,
}

/// The census's copies, allocated before the walk, so that the loader's
/// callback, which runs under glibc's list lock, neither allocates nor
/// reads files.
struct Linkers {
    found: Box<[Linker]>,
    len: usize,
    /// An object did not fit (more than `MAX_LINKERS`, a longer name or
    /// more headers).
    overflow: bool,
}

impl Linker {
    fn release(&self) -> Option<Release> {
        match self.linked {
            LinkedName::Versioned(release) => Some(release),
            LinkedName::Unversioned => {
                let name = CStr::from_bytes_with_nul(&self.name[..=self.name_len]).ok()?;
                Some(
                    compiler::release_of(&compiler::Loaded {
                        name,
                        start: self.start,
                        headers: &self.headers[..self.header_count],
                    })
                    .unwrap_or_default(),
                )
            }
        }
    }
}

/// The one release of the loaded objects that link libomptarget, if they
/// agree.
fn count_releases() -> Option<Release> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the `Linkers` `count_releases` passes; `info`
        // is glibc's description of one loaded object, valid during the
        // call.
        let (linkers, info) = unsafe { (&mut *(data as *mut Linkers), &*info) };
        let bias = info.dlpi_addr as usize;
        // SAFETY: glibc's program header array of `dlpi_phnum` entries.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let (mut start, mut dynamic) = (usize::MAX, None);
        for h in headers {
            if h.p_type == libc::PT_LOAD {
                start = start.min(bias + h.p_vaddr as usize);
            } else if h.p_type == libc::PT_DYNAMIC {
                dynamic = Some(bias + h.p_vaddr as usize);
            }
        }
        // SAFETY: the object's dynamic section, mapped while it is loaded.
        let Some(linked) = dynamic.and_then(|d| unsafe { linked_name(d as *const Dyn, bias) })
        else {
            return 0;
        };
        let name: &[u8] = if info.dlpi_name.is_null() {
            &[]
        } else {
            // SAFETY: glibc's NUL-terminated name of the object.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        if linkers.len == MAX_LINKERS || name.len() >= MAX_NAME || headers.len() > MAX_HEADERS {
            linkers.overflow = true;
            return 1;
        }
        let copy = &mut linkers.found[linkers.len];
        copy.linked = linked;
        copy.start = start;
        copy.name[..name.len()].copy_from_slice(name);
        copy.name[name.len()] = 0;
        copy.name_len = name.len();
        copy.headers[..headers.len()].copy_from_slice(headers);
        copy.header_count = headers.len();
        linkers.len += 1;
        0
    }
    // SAFETY: `Elf64_Phdr` is plain integers: all zeros is a valid value.
    let empty_header: libc::Elf64_Phdr = unsafe { std::mem::zeroed() };
    let mut linkers = Linkers {
        found: (0..MAX_LINKERS)
            .map(|_| Linker {
                linked: LinkedName::Unversioned,
                start: 0,
                name: [0; MAX_NAME],
                name_len: 0,
                headers: [empty_header; MAX_HEADERS],
                header_count: 0,
            })
            .collect(),
        len: 0,
        overflow: false,
    };
    // SAFETY: the callback reads glibc's records and writes into
    // `linkers`' buffers, alive for the call; it allocates nothing.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut linkers as *mut Linkers as *mut c_void) };
    if linkers.overflow {
        return None;
    }
    // Each unversioned object's release is its file's evidence, read now
    // from the copies, whether or not the object is still loaded.
    let mut releases = linkers.found[..linkers.len].iter().map(Linker::release);
    let first = releases.next()??;
    releases.all(|r| r == Some(first)).then_some(first)
}

/// The current C call's return address (the first frame past this
/// library's own, as `__builtin_return_address(0)` in the export would
/// give it) and its caller's release, from one walk. For OMPT's
/// `codeptr_ra`; asked only while a tool listens.
pub(crate) fn call_site() -> omptarget_openmp::ompt::CallSite {
    let frames = walk();
    let own = object_of(call_site as *const () as usize);
    let in_own = |ip: usize| own.is_some_and(|o| (o.start..o.end).contains(&ip.saturating_sub(1)));
    let return_address = frames.ips[..frames.len]
        .iter()
        .skip_while(|&&ip| !in_own(ip))
        .find(|&&ip| !in_own(ip))
        .copied()
        .unwrap_or(0);
    let release = ON_BEHALF
        .with(Cell::get)
        .unwrap_or_else(|| release_of(&frames));
    omptarget_openmp::ompt::CallSite {
        return_address,
        release,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A census word answers only for the counts it was taken at, and
    /// keeps each answer, "mixed or none" included.
    #[test]
    fn a_census_answers_only_for_its_counts() {
        for sole in [
            None,
            Some(Release::Llvm14),
            Some(Release::Llvm19),
            Some(Release::Llvm22),
        ] {
            let word = census_word(7, 3, sole).unwrap();
            assert_ne!(word, 0);
            assert_eq!(census_answer(word, 7, 3), Some(sole));
            assert_eq!(census_answer(word, 8, 3), None);
            assert_eq!(census_answer(word, 7, 4), None);
        }
        assert_eq!(census_answer(0, 0, 0), None, "no census yet");
        assert_eq!(census_word(1 << COUNT_BITS, 0, None), None);
        assert_eq!(census_word(0, 1 << COUNT_BITS, None), None);
    }

    /// This test binary links no libomptarget: no loaded object agrees on
    /// a release, and the census says so for the current counts.
    #[test]
    fn a_process_without_linking_objects_has_no_sole_release() {
        assert_eq!(sole_release(), None);
        let (adds, subs) = list_counts();
        assert_eq!(census_answer(CENSUS.load(Relaxed), adds, subs), Some(None));
    }
}
