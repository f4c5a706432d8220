//! Redirecting a named function's calls by rewriting GOT slots (x86_64
//! Linux), the way LLNL's GOTCHA does, without `LD_PRELOAD`.
//!
//! In spawn mode the plugin initialises MPI before `main`, so the
//! program's own `MPI_Init` must reach the plugin's wrapper instead. A call
//! from one object to a function of another goes through a slot of the
//! caller's global offset table, which the loader fills from a dynamic
//! relocation naming the symbol: `R_X86_64_JUMP_SLOT` (calls through the
//! PLT) or `R_X86_64_GLOB_DAT` (`-fno-plt` calls and the function's
//! address taken). [`redirect`] rewrites every such slot bound to a name in
//! the loaded objects the caller does not [skip](redirect), and returns
//! them as a [`Redirected`], whose [`restore`](Redirected::restore) puts
//! the original values back.
//!
//! How:
//! 1. `dl_iterate_phdr` lists the loaded objects. Its callback runs under
//!    the loader's lock, so it only copies each object's load bias, name
//!    and program headers into buffers reserved before the walk (a first
//!    walk counts them); everything else happens after.
//! 2. Each object that is not skipped is pinned (`dlopen` with
//!    `RTLD_NOLOAD`, checked to be the same object by its load bias), so
//!    that it cannot be unloaded while its slots are rewritten or before
//!    they are restored: a write into an unloaded object's pages would
//!    corrupt whatever was mapped there next.
//! 3. Its file is read (`std::fs::read`, a private copy: a mapped file that
//!    another process truncates would fault on access, a copy cannot) and
//!    its dynamic relocations searched with the `object` crate. The main
//!    program has no name in the list; its file is `/proc/self/exe`, which
//!    opens it even when it was deleted since.
//! 4. Only when every object was read does any slot change (all or none).
//!    A slot inside the object's `PT_GNU_RELRO` pages (read-only after
//!    relocation: always so with `-z now`) has its page made writable for
//!    the write and read-only again after; any other slot is just written.
//!    Each write is one aligned pointer-sized atomic store, so a thread
//!    calling through the slot meanwhile sees the old or the new function.
//!
//! Not covered: relocations of other kinds naming the function (a function
//! pointer in initialised data: `R_X86_64_64`), objects loaded after the
//! redirect, objects in other link namespaces (`dlmopen`; not found by the
//! pin, skipped with a trace), files without section headers (the `object`
//! crate finds relocations through them; such a file yields no slots).
//! With lazy binding, a thread resolving the slot's first call at the
//! moment of the redirect may write the real function over the
//! replacement (the redirect belongs before the program's threads start).
//!
//! A slot's original value is not necessarily the function itself (with
//! lazy binding it is the PLT's resolver stub): a replacement that calls
//! the real function finds it with `dlsym`, not from [`Slot::original`].
use object::{
    Architecture, BinaryFormat, Object, ObjectSymbol, ObjectSymbolTable, RelocationFlags,
    RelocationTarget,
};
use std::ffi::{c_int, c_void, CStr, CString, OsStr};
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Why a redirect or its restore failed. A redirect that fails has left
/// every slot as it found it (unless putting one back failed too: traced).
#[derive(Debug, thiserror::Error)]
pub enum GotError {
    /// A loaded object's file could not be read.
    #[error("cannot read {}, a loaded object, to find its GOT slots: {source}", path.display())]
    Read {
        /// The object's file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A loaded object's file is not a readable ELF object.
    #[error("cannot parse {}, a loaded object, as ELF: {source}", path.display())]
    Parse {
        /// The object's file.
        path: PathBuf,
        /// What the parser found.
        #[source]
        source: object::Error,
    },
    /// A loaded object's file is ELF, but not a 64-bit x86_64 one, which
    /// every object of this process is: the file changed since it was
    /// loaded.
    #[error("{} is not a 64-bit x86_64 ELF object, but it is loaded in this process: the file changed since it was loaded?", path.display())]
    Foreign {
        /// The object's file.
        path: PathBuf,
    },
    /// A relocation of the file names a slot that is not an aligned word
    /// inside the loaded object's writable segments: the file does not
    /// match the loaded object (changed since it was loaded?).
    #[error("{}: the relocation at {offset:#x} names no aligned slot of the loaded object's writable segments: the file changed since it was loaded?", path.display())]
    BadSlot {
        /// The object's file.
        path: PathBuf,
        /// The relocation's offset (from the object's load bias).
        offset: u64,
    },
    /// Changing the protection of a read-only GOT page failed.
    #[error("mprotect of the read-only GOT page at {page:#x} failed: {source}")]
    Protect {
        /// The page's address.
        page: usize,
        /// The OS error (its errno).
        #[source]
        source: std::io::Error,
    },
    /// Objects kept being loaded between the walk that counts the loaded
    /// objects and the one that copies them.
    #[error("the loaded objects kept changing while they were listed")]
    Busy,
}

/// One rewritten slot: where, and what it held.
#[derive(Debug)]
pub struct Slot {
    address: usize,
    original: usize,
    replacement: usize,
    /// The slot lies in its object's read-only-after-relocation pages.
    read_only: bool,
    object: PathBuf,
}

impl Slot {
    /// The slot's address in this process.
    pub fn address(&self) -> usize {
        self.address
    }
    /// What the slot held before (not necessarily the function: see the
    /// module's documentation).
    pub fn original(&self) -> usize {
        self.original
    }
    /// The file of the object the slot belongs to.
    pub fn object(&self) -> &Path {
        &self.object
    }
}

/// The slots one [`redirect`] rewrote, and the objects it pinned (kept
/// loaded) for them. [`Redirected::restore`] puts the originals back; it
/// must be called before the replacement's code is unloaded (before the
/// plugin library is `dlclose`d). Dropped without `restore`, the slots
/// keep the replacement and the objects are unpinned (for a replacement
/// that stays loaded until the process ends).
#[derive(Debug)]
#[must_use = "dropping it leaves the slots redirected for good: call restore"]
pub struct Redirected {
    slots: Vec<Slot>,
    /// Declared after `slots`: released after them.
    _pins: Vec<Pin>,
}

impl Redirected {
    /// How many slots were rewritten.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// No object binds the name (outside the skipped ones).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
    /// The rewritten slots.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }
    /// The files of the objects whose slots were rewritten, each once.
    pub fn objects(&self) -> impl Iterator<Item = &Path> {
        // Slots are collected object by object: equal paths are adjacent.
        let mut last: Option<&Path> = None;
        self.slots.iter().filter_map(move |slot| {
            let path = slot.object.as_path();
            (last != Some(path)).then(|| {
                last = Some(path);
                path
            })
        })
    }
    /// Puts every slot's original value back, then unpins the objects. A
    /// slot that no longer holds the replacement (someone rewrote it
    /// since) is left as it is, with a warning. Every slot is tried; the
    /// first failure is returned.
    pub fn restore(self) -> Result<(), GotError> {
        put_back(&self.slots)
    }
}

/// Rewrites every GOT slot bound to `symbol` (a `JUMP_SLOT` or `GLOB_DAT`
/// relocation; the name compared byte for byte, without a version suffix
/// `@...`) in the loaded objects whose file `skip` does not exclude, to
/// hold `replacement`. `skip` gets each object's file (the main program's
/// as `/proc/self/exe` links it); it should exclude the object defining
/// `symbol` if its own calls must not be redirected, and the replacement's
/// object if the replacement calls `symbol` by name.
///
/// A name that no object binds is not an error: the result is empty. An
/// object whose file cannot be read or parsed is an error, and nothing is
/// rewritten; the kernel's vDSO (no file) and objects with no name other
/// than the main program are passed over with a debug trace.
///
/// # Safety
/// `replacement` is the address of a function with the same signature
/// and calling convention as `symbol`'s, and stays mapped until the
/// result's [`restore`](Redirected::restore) (or for ever, if it is
/// dropped).
pub unsafe fn redirect(
    symbol: &str,
    replacement: usize,
    skip: impl Fn(&Path) -> bool,
) -> Result<Redirected, GotError> {
    let mut slots = Vec::new();
    let mut pins = Vec::new();
    let page = page_size();
    for object in loaded()? {
        let Some(found) = object.file() else {
            tracing::debug!(
                bias = object.bias,
                "got: passing over the vDSO or a nameless object: no file to read"
            );
            continue;
        };
        if skip(&found.path) {
            continue;
        }
        let Some(pin) = Pin::new(&object) else {
            tracing::debug!(path = %found.path.display(), "got: passing over an object that dlopen does not find (unloaded since, or in another namespace)");
            continue;
        };
        let data = std::fs::read(&found.read).map_err(|source| GotError::Read {
            path: found.path.clone(),
            source,
        })?;
        let offsets = bound_offsets(&data, symbol.as_bytes(), &found.path)?;
        if offsets.is_empty() {
            continue;
        }
        let relro = object.relro(page);
        for offset in offsets {
            let address = object.slot(offset).ok_or_else(|| GotError::BadSlot {
                path: found.path.clone(),
                offset,
            })?;
            slots.push(Slot {
                address,
                original: 0,
                replacement,
                read_only: relro.as_ref().is_some_and(|r| r.contains(&address)),
                object: found.path.clone(),
            });
        }
        pins.push(pin);
    }
    let _writing = WRITING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for done in 0..slots.len() {
        let slot = &slots[done];
        // SAFETY: `slot.address` is an aligned word of a writable segment
        // of a pinned object (`LoadedObject::slot`), its GOT slot for
        // `symbol`; the caller vouches for `replacement`.
        match unsafe { write_slot(slot.address, slot.read_only, None, replacement) } {
            Ok(original) => slots[done].original = original,
            Err(err) => {
                // All or none: put back the ones already written.
                if let Err(also) = put_back_locked(&slots[..done]) {
                    tracing::warn!(%also, "got: a slot of a failed redirect could not be put back");
                }
                return Err(err);
            }
        }
    }
    Ok(Redirected { slots, _pins: pins })
}

/// Serialises the slot writes of all redirects and restores: one thread's
/// re-protection of a page must not land while another writes to it.
static WRITING: Mutex<()> = Mutex::new(());

fn put_back(slots: &[Slot]) -> Result<(), GotError> {
    let _writing = WRITING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    put_back_locked(slots)
}

fn put_back_locked(slots: &[Slot]) -> Result<(), GotError> {
    let mut first = Ok(());
    for slot in slots.iter().rev() {
        // SAFETY: the slot `redirect` wrote, in an object still pinned by
        // the `Redirected` (or by `redirect` itself) that owns `slots`.
        let put = unsafe {
            write_slot(
                slot.address,
                slot.read_only,
                Some(slot.replacement),
                slot.original,
            )
        };
        match put {
            Ok(now) if now != slot.replacement => tracing::warn!(
                address = slot.address,
                object = %slot.object.display(),
                "got: a redirected slot was rewritten by someone else since; left as it is"
            ),
            Ok(_) => {}
            Err(err) => {
                if first.is_ok() {
                    first = Err(err);
                }
            }
        }
    }
    first
}

/// Replaces the word at `address` with `value` (if it holds `expected`,
/// when given), returning the word it held; a `read_only` slot's page is made writable
/// for the write and read-only again after. Called holding `WRITING`.
///
/// # Safety
/// `address` is an aligned, mapped word of a GOT (`read_only`: in pages
/// the loader made read-only, whose whole pages are read-only), and the
/// new value is a valid target for the calls through it.
unsafe fn write_slot(
    address: usize,
    read_only: bool,
    expected: Option<usize>,
    value: usize,
) -> Result<usize, GotError> {
    let page = address & !(page_size() - 1);
    let protect = |prot: c_int| {
        // SAFETY: `page` is the mapped page holding the slot; only its
        // protection changes, between read-only (as the loader left it)
        // and read-write, for this write.
        if unsafe { libc::mprotect(page as *mut c_void, page_size(), prot) } == 0 {
            Ok(())
        } else {
            Err(GotError::Protect {
                page,
                source: std::io::Error::last_os_error(),
            })
        }
    };
    if read_only {
        protect(libc::PROT_READ | libc::PROT_WRITE)?;
        #[cfg(test)]
        tests::seen_while_writing(page);
    }
    // SAFETY: an aligned word, mapped and (now) writable, for as long as
    // the object is pinned; other threads only read it, atomically in
    // effect (aligned word loads).
    let slot = unsafe { AtomicUsize::from_ptr(address as *mut usize) };
    let result = match expected {
        None => slot.swap(value, Ordering::SeqCst),
        Some(expected) => slot
            .compare_exchange(expected, value, Ordering::SeqCst, Ordering::SeqCst)
            .unwrap_or_else(|now| now),
    };
    if read_only {
        // Left writable if this fails: the write itself stands, and the
        // caller's rollback or restore can still write the page.
        protect(libc::PROT_READ)?;
    }
    Ok(result)
}

/// The page size (the granularity of `mprotect` and of the loader's
/// RELRO protection).
fn page_size() -> usize {
    // SAFETY: sysconf reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// The offsets (from the load bias) of the slots that the ELF file `data`
/// binds to `symbol` through `JUMP_SLOT` or `GLOB_DAT` relocations.
fn bound_offsets(data: &[u8], symbol: &[u8], path: &Path) -> Result<Vec<u64>, GotError> {
    let file = object::File::parse(data).map_err(|source| GotError::Parse {
        path: path.to_owned(),
        source,
    })?;
    if file.format() != BinaryFormat::Elf
        || file.architecture() != Architecture::X86_64
        || !file.is_64()
    {
        return Err(GotError::Foreign {
            path: path.to_owned(),
        });
    }
    let (Some(relocations), Some(symbols)) =
        (file.dynamic_relocations(), file.dynamic_symbol_table())
    else {
        return Ok(Vec::new());
    };
    let mut offsets = Vec::new();
    for (offset, relocation) in relocations {
        let RelocationFlags::Elf { r_type } = relocation.flags() else {
            continue;
        };
        if r_type != object::elf::R_X86_64_JUMP_SLOT && r_type != object::elf::R_X86_64_GLOB_DAT {
            continue;
        }
        let RelocationTarget::Symbol(index) = relocation.target() else {
            continue;
        };
        let named = symbols
            .symbol_by_index(index)
            .and_then(|s| s.name_bytes())
            .is_ok_and(|name| same_name(name, symbol));
        if named {
            offsets.push(offset);
        }
    }
    Ok(offsets)
}

/// `name` (from a symbol table, perhaps `NAME@VERSION`) is `symbol`: the
/// whole name before any `@`, byte for byte (`MPI_Init` is not
/// `MPI_Init_thread`).
fn same_name(name: &[u8], symbol: &[u8]) -> bool {
    name.split(|&b| b == b'@').next() == Some(symbol)
}

/// One loaded object, copied out of the loader's list.
struct LoadedObject {
    /// Its place in the list (the main program is first).
    index: usize,
    /// Its load bias: runtime address = bias + file address.
    bias: usize,
    /// Its name in the loader's list (empty for the main program).
    name: Vec<u8>,
    headers: Vec<libc::Elf64_Phdr>,
}

/// Where an object's file is: the path for messages and `skip`, and the
/// one to read.
struct FoundFile {
    path: PathBuf,
    read: PathBuf,
}

impl LoadedObject {
    /// Its file, or `None` for the vDSO (its ELF header is where the
    /// kernel's auxiliary vector says the vDSO is) and nameless objects
    /// other than the main program.
    fn file(&self) -> Option<FoundFile> {
        // SAFETY: getauxval reads the process's auxiliary vector.
        let vdso = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) } as usize;
        let header = self
            .headers
            .iter()
            .find(|h| h.p_type == libc::PT_LOAD && h.p_offset == 0)
            .map(|h| self.bias.wrapping_add(h.p_vaddr as usize));
        if vdso != 0 && header == Some(vdso) {
            return None;
        }
        if !self.name.is_empty() {
            let path = PathBuf::from(OsStr::from_bytes(&self.name));
            return Some(FoundFile {
                read: path.clone(),
                path,
            });
        }
        (self.index == 0).then(|| {
            let read = PathBuf::from("/proc/self/exe");
            FoundFile {
                path: std::fs::read_link(&read).unwrap_or_else(|_| read.clone()),
                read,
            }
        })
    }

    /// The pages the loader made read-only after relocation: its
    /// `PT_GNU_RELRO` range, rounded as glibc's `_dl_protect_relro` does
    /// (start and end down to a page: a partial last page stays writable).
    fn relro(&self, page: usize) -> Option<Range<usize>> {
        let h = self
            .headers
            .iter()
            .find(|h| h.p_type == libc::PT_GNU_RELRO)?;
        let start = self.bias.checked_add(h.p_vaddr as usize)?;
        let end = start.checked_add(h.p_memsz as usize)?;
        let range = (start & !(page - 1))..(end & !(page - 1));
        (!range.is_empty()).then_some(range)
    }

    /// The runtime address of the slot at `offset`, if it is an aligned
    /// word inside one of the object's writable loaded segments.
    fn slot(&self, offset: u64) -> Option<usize> {
        let address = self.bias.checked_add(usize::try_from(offset).ok()?)?;
        let word = std::mem::size_of::<usize>();
        let end = address.checked_add(word)?;
        let inside = self.headers.iter().any(|h| {
            let start = self.bias.wrapping_add(h.p_vaddr as usize);
            h.p_type == libc::PT_LOAD
                && h.p_flags & libc::PF_W != 0
                && start <= address
                && start
                    .checked_add(h.p_memsz as usize)
                    .is_some_and(|e| end <= e)
        });
        (inside && address % word == 0).then_some(address)
    }
}

/// A `dlopen` reference keeping a loaded object loaded.
#[derive(Debug)]
struct Pin(*mut c_void);

// SAFETY: a dlopen handle is process-wide; dlclose takes it from any thread.
unsafe impl Send for Pin {}
// SAFETY: nothing is reached through `&Pin`.
unsafe impl Sync for Pin {}

/// The start of glibc's `struct link_map` (`<link.h>`): its first member.
#[repr(C)]
struct LinkMapHead {
    l_addr: usize,
}

impl Pin {
    /// A reference to `object` if the loader still has it (by its name,
    /// the main program by `NULL`) at the same load bias.
    fn new(object: &LoadedObject) -> Option<Pin> {
        let name = if object.index == 0 && object.name.is_empty() {
            None
        } else {
            Some(CString::new(object.name.clone()).ok()?)
        };
        let name_ptr = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        // SAFETY: a NUL-terminated name or NULL; RTLD_NOLOAD loads nothing,
        // so no object's constructors run.
        let handle = unsafe { libc::dlopen(name_ptr, libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            return None;
        }
        let pin = Pin(handle);
        let mut map: *mut LinkMapHead = std::ptr::null_mut();
        // SAFETY: `handle` is a live dlopen handle; RTLD_DI_LINKMAP writes
        // its `struct link_map *` into `map`.
        let asked = unsafe {
            libc::dlinfo(
                handle,
                libc::RTLD_DI_LINKMAP,
                (&mut map as *mut *mut LinkMapHead).cast(),
            )
        };
        // SAFETY: the loader's link map of a pinned object; `l_addr` is
        // its first member.
        let same = asked == 0 && !map.is_null() && unsafe { (*map).l_addr } == object.bias;
        same.then_some(pin)
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        // SAFETY: the handle `Pin::new` got, closed once.
        unsafe { libc::dlclose(self.0) };
    }
}

/// The loaded objects, in the loader's order.
fn loaded() -> Result<Vec<LoadedObject>, GotError> {
    for _ in 0..8 {
        let mut walk = Walk::counting();
        walk.run();
        let mut walk = walk.reserved();
        walk.run();
        if !walk.overflow {
            return Ok(walk.objects());
        }
    }
    Err(GotError::Busy)
}

/// What a `dl_iterate_phdr` callback copies: each object's bias and the
/// ranges of its name and program headers in the shared buffers.
struct Walk {
    /// A counting walk only adds up the sizes below.
    counting: bool,
    entries: Vec<(usize, Range<usize>, Range<usize>)>,
    names: Vec<u8>,
    headers: Vec<libc::Elf64_Phdr>,
    count: (usize, usize, usize),
    /// An object did not fit the reserved buffers.
    overflow: bool,
}

impl Walk {
    fn counting() -> Walk {
        Walk {
            counting: true,
            entries: Vec::new(),
            names: Vec::new(),
            headers: Vec::new(),
            count: (0, 0, 0),
            overflow: false,
        }
    }

    /// A copying walk with room for what this counting walk saw, and
    /// some more for objects loaded in between.
    fn reserved(self) -> Walk {
        let (objects, names, headers) = self.count;
        Walk {
            counting: false,
            entries: Vec::with_capacity(objects + 8),
            names: Vec::with_capacity(names + 8 * 256),
            headers: Vec::with_capacity(headers + 8 * 16),
            count: (0, 0, 0),
            overflow: false,
        }
    }

    fn run(&mut self) {
        // SAFETY: `each` only reads the loader's records and writes into
        // `self`, alive for the call; it allocates nothing.
        unsafe { libc::dl_iterate_phdr(Some(each), (self as *mut Walk).cast()) };
    }

    fn objects(self) -> Vec<LoadedObject> {
        self.entries
            .into_iter()
            .enumerate()
            .map(|(index, (bias, name, headers))| LoadedObject {
                index,
                bias,
                name: self.names[name].to_vec(),
                headers: self.headers[headers].to_vec(),
            })
            .collect()
    }
}

/// The `dl_iterate_phdr` callback: runs under the loader's lock, so it
/// neither allocates nor reads files. A `Vec` within its capacity does
/// not reallocate (`Vec`'s documented guarantee), so the copies only fill
/// the reserved buffers; an object that does not fit stops the walk.
unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Walk` that `Walk::run` passes; `info` is the
    // loader's description of one object, valid during the call.
    let (walk, info) = unsafe { (&mut *data.cast::<Walk>(), &*info) };
    let name: &[u8] = if info.dlpi_name.is_null() {
        &[]
    } else {
        // SAFETY: the loader's NUL-terminated name of the object.
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
        &[]
    } else {
        // SAFETY: the loader's array of `dlpi_phnum` program headers.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    if walk.counting {
        walk.count.0 += 1;
        walk.count.1 += name.len();
        walk.count.2 += headers.len();
        return 0;
    }
    let fits = walk.entries.len() < walk.entries.capacity()
        && walk.names.capacity() - walk.names.len() >= name.len()
        && walk.headers.capacity() - walk.headers.len() >= headers.len();
    if !fits {
        walk.overflow = true;
        return 1;
    }
    let name_at = walk.names.len();
    walk.names.extend_from_slice(name);
    let headers_at = walk.headers.len();
    walk.headers.extend_from_slice(headers);
    walk.entries.push((
        info.dlpi_addr as usize,
        name_at..walk.names.len(),
        headers_at..walk.headers.len(),
    ));
    0
}

#[cfg(test)]
mod tests;
