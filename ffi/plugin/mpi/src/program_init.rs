//! The program's own `MPI_Init` when the plugin initialised MPI first.
//!
//! With spawned servers (`OMPTARGET_MPI_SPAWN`), the plugin initialises
//! MPI when it initialises: for a clang-compiled program that is when its
//! image registers, before `main`. An MPI program then calls `MPI_Init` or
//! `MPI_Init_thread` in `main`, which MPI refuses (initialised twice; Open
//! MPI aborts the job). So the program's calls of those two, and of their
//! profiling names `PMPI_Init` and `PMPI_Init_thread` (which Fortran
//! bindings and PMPI tools call), are redirected to the wrappers here, by
//! rewriting the slots of the loaded objects' global offset tables that
//! bind them ([`crate::got`], as LLNL's GOTCHA does; no `LD_PRELOAD`). A
//! tool that interposes `MPI_Init` itself (mpiP, Score-P, Darshan) keeps
//! it: its `MPI_Init` runs and calls `PMPI_Init`, which is redirected.
//!
//! A wrapper answers the program's first initialisation as MPI would have
//! (`MPI_SUCCESS`; `MPI_Init_thread` gives the level the plugin got, which
//! is `MPI_THREAD_MULTIPLE`), and passes every later call to the library's
//! own function, which refuses it as MPI does. The program finalises MPI
//! as usual: `MPI_Finalize` closes the servers first
//! ([`crate::finalize_hook`]).
//!
//! Not redirected: an object loaded after the plugin initialised (a
//! library the program `dlopen`s later), and a call through a pointer
//! the program took with `dlsym`. The library's own calls are left
//! alone.
use crate::got::{self, GotError, Redirected};
use crate::mpi::{InitEntries, Mpi};
use std::ffi::{c_char, c_int};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

/// The library's `MPI_Init` and `MPI_Init_thread` (0 until installed).
static REAL_INIT: AtomicUsize = AtomicUsize::new(0);
static REAL_INIT_THREAD: AtomicUsize = AtomicUsize::new(0);
/// The library's `MPI_Initialized`, `MPI_Finalized` and `MPI_Finalize`,
/// for the exit handler of a hand-over (0 until installed).
static REAL_INITIALIZED: AtomicUsize = AtomicUsize::new(0);
static REAL_FINALIZED: AtomicUsize = AtomicUsize::new(0);
static REAL_FINALIZE: AtomicUsize = AtomicUsize::new(0);
/// The slots redirected for good ([`ProgramInit::hand_over`]).
static HANDED_OVER: AtomicPtr<Vec<Redirected>> = AtomicPtr::new(std::ptr::null_mut());
/// The thread level MPI gave the plugin.
static PROVIDED: AtomicI32 = AtomicI32::new(0);
/// Whether a wrapper answers the program's first initialisation itself.
static STANDING_IN: AtomicBool = AtomicBool::new(false);
/// The program's initialisations so far.
static PROGRAM_INITS: AtomicU32 = AtomicU32::new(0);
/// `MPI_ERR_OTHER` of the library's family, for a wrapper that cannot
/// reach the library (never expected).
static ERR_OTHER: AtomicI32 = AtomicI32::new(16);

/// The redirected slots; [`ProgramInit::remove`] puts them back.
pub struct ProgramInit {
    redirected: Vec<Redirected>,
}

impl ProgramInit {
    /// Redirect the program's `MPI_Init` and `MPI_Init_thread` to the
    /// wrappers (the library `mpi` opened is skipped). `provided`: the
    /// thread level MPI gave the plugin.
    pub fn install(mpi: &Mpi, provided: c_int) -> Result<ProgramInit, GotError> {
        let entries = mpi.init_entries();
        let InitEntries {
            init, init_thread, ..
        } = entries;
        let entries = &entries;
        REAL_INITIALIZED.store(entries.initialized as *const () as usize, Ordering::Release);
        REAL_FINALIZED.store(entries.finalized as *const () as usize, Ordering::Release);
        REAL_FINALIZE.store(entries.finalize as *const () as usize, Ordering::Release);
        REAL_INIT.store(init as *const () as usize, Ordering::Release);
        REAL_INIT_THREAD.store(init_thread as *const () as usize, Ordering::Release);
        PROVIDED.store(provided, Ordering::Release);
        ERR_OTHER.store(mpi.constants.err_other, Ordering::Release);
        PROGRAM_INITS.store(0, Ordering::Release);
        STANDING_IN.store(true, Ordering::Release);
        let library = file_of(init as *const () as usize);
        let skip =
            |path: &std::path::Path| library.as_deref().is_some_and(|lib| same_file(lib, path));
        let mut redirected = Vec::new();
        let init_wrapper = wrapped_init as *const () as usize;
        let thread_wrapper = wrapped_init_thread as *const () as usize;
        // The profiling names always (Fortran bindings and tools call
        // them); the plain names only where nothing interposes them
        // before MPI's library (a tool's `MPI_Init`, found first, runs
        // and calls `PMPI_Init`, which reaches the wrapper).
        let mut wrappers = vec![
            ("PMPI_Init", init_wrapper),
            ("PMPI_Init_thread", thread_wrapper),
        ];
        if !interposed(c"MPI_Init", init as *const () as usize) {
            wrappers.push(("MPI_Init", init_wrapper));
        }
        if !interposed(c"MPI_Init_thread", init_thread as *const () as usize) {
            wrappers.push(("MPI_Init_thread", thread_wrapper));
        }
        for (symbol, wrapper) in wrappers {
            // SAFETY: each wrapper has its symbol's signature, and lives
            // in this library, which stays loaded until `remove` (called
            // by the plugin's deinit, before the library is closed).
            match unsafe { got::redirect(symbol, wrapper, skip) } {
                Ok(done) => redirected.push(done),
                Err(err) => {
                    let partial = ProgramInit { redirected };
                    let _ = partial.remove();
                    return Err(err);
                }
            }
        }
        let slots: usize = redirected.iter().map(Redirected::len).sum();
        tracing::debug!(
            slots,
            "the program's MPI_Init and MPI_Init_thread answered by the MPI plugin"
        );
        Ok(ProgramInit { redirected })
    }

    /// Whether no slot was redirected (the program links no MPI).
    pub fn is_empty(&self) -> bool {
        self.redirected.iter().all(Redirected::is_empty)
    }

    /// Leave the slots redirected for the rest of the process (MPI stays
    /// initialised for the program, whose first `MPI_Init` the wrappers
    /// answer): this library is pinned (`RTLD_NODELETE`), so that closing
    /// the plugin does not unmap them. `Err(self)` when it cannot be
    /// pinned.
    pub fn hand_over(self) -> Result<(), ProgramInit> {
        let Some(file) = file_of(wrapped_init as *const () as usize) else {
            return Err(self);
        };
        let Ok(name) = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()) else {
            return Err(self);
        };
        // SAFETY: this library, already loaded (NOLOAD): only a reference
        // and the no-delete flag are added; the handle is never closed.
        let pinned = unsafe {
            libc::dlopen(
                name.as_ptr(),
                libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            )
        };
        if pinned.is_null() {
            return Err(self);
        }
        // Never restored: the slots must keep pointing at the wrappers.
        // Kept where a leak checker sees it reachable (never freed: no
        // destructor runs for a static).
        let kept = Box::into_raw(Box::new(self.redirected));
        HANDED_OVER.store(kept, Ordering::Release);
        // A program that links MPI but, this run, never initialises it
        // (a --help path, a serial mode) must still leave MPI finalised,
        // or its launcher reports that it exited improperly: the plugin's
        // safety net does it at exit (`MpiBackend::on_unload`; this
        // library, pinned, is unloaded only then). No exit handler of its
        // own: the project registers none.
        Ok(())
    }

    /// Put the slots back: the program's later calls reach the library.
    pub fn remove(self) -> Result<(), GotError> {
        STANDING_IN.store(false, Ordering::Release);
        let mut first = Ok(());
        for redirected in self.redirected {
            if let Err(err) = redirected.restore() {
                first = first.and(Err(err));
            }
        }
        first
    }
}

/// At exit, after a hand-over (from the plugin's safety net, which runs
/// once the pinned library is unloaded: at exit): finalise MPI if the
/// program never claimed it (no `MPI_Init` of its own) and it is still
/// initialised. Nothing otherwise.
pub fn finalize_unclaimed() {
    let _ = std::panic::catch_unwind(|| {
        // Handed over: the redirections were kept (never null after it).
        if HANDED_OVER.load(Ordering::Acquire).is_null()
            || PROGRAM_INITS.load(Ordering::Acquire) > 0
        {
            return;
        }
        let (query, done, finalize) = (
            REAL_INITIALIZED.load(Ordering::Acquire),
            REAL_FINALIZED.load(Ordering::Acquire),
            REAL_FINALIZE.load(Ordering::Acquire),
        );
        if query == 0 || done == 0 || finalize == 0 {
            return;
        }
        type Flag = unsafe extern "C" fn(*mut c_int) -> c_int;
        // SAFETY: the library's own functions of these signatures, stored
        // by `install` (its library stays loaded).
        let (query, done, finalize): (Flag, Flag, unsafe extern "C" fn() -> c_int) = unsafe {
            (
                std::mem::transmute::<usize, Flag>(query),
                std::mem::transmute::<usize, Flag>(done),
                std::mem::transmute::<usize, unsafe extern "C" fn() -> c_int>(finalize),
            )
        };
        let (mut initialized, mut finalized): (c_int, c_int) = (0, 0);
        // SAFETY: MPI's own functions, callable at any time.
        unsafe {
            query(&mut initialized);
            done(&mut finalized);
        }
        if initialized != 0 && finalized == 0 {
            // SAFETY: initialised by the plugin, unclaimed, not finalised.
            unsafe { finalize() };
        }
    });
}

/// Whether the first definition of `symbol` in the process's global
/// scope (what the program's call binds to) is another object's than
/// MPI's own `own` (a tool's, preloaded or linked before MPI).
///
/// `dlsym` may answer with a non-PIE executable's canonical PLT entry
/// (an executable that takes `MPI_Init`'s address), which is not a
/// definition: so the address counts only where the object holding it
/// defines the symbol at it (`dladdr` names it).
fn interposed(symbol: &std::ffi::CStr, own: usize) -> bool {
    // SAFETY: a NUL-terminated name; the address is only compared.
    let first = unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) } as usize;
    if first == 0 || first == own {
        return false;
    }
    /// glibc's `RTLD_DL_SYMENT`: `dladdr1` gives the symbol's entry.
    const RTLD_DL_SYMENT: std::ffi::c_int = 1;
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let mut entry: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: `info` and `entry` are written by dladdr1, read only when
    // it answers.
    let found = unsafe {
        libc::dladdr1(
            first as *const libc::c_void,
            info.as_mut_ptr(),
            &mut entry,
            RTLD_DL_SYMENT,
        )
    };
    if found == 0 || entry.is_null() {
        return false;
    }
    // SAFETY: written by dladdr1, which answered.
    let info = unsafe { info.assume_init() };
    // SAFETY: the object's own symbol entry, mapped while it is loaded.
    let entry = unsafe { &*entry.cast::<libc::Elf64_Sym>() };
    // A canonical PLT entry is an undefined symbol with a value.
    entry.st_shndx != 0
        && !info.dli_sname.is_null()
        && info.dli_saddr as usize == first
        // SAFETY: the loader's NUL-terminated name, not null.
        && unsafe { std::ffi::CStr::from_ptr(info.dli_sname) } == symbol
}

/// The file of the loaded object holding `address` (`dladdr`).
pub(crate) fn file_of(address: usize) -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `info` is written by dladdr, read only when it answers.
    if unsafe { libc::dladdr(address as *const libc::c_void, info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: written by dladdr, which answered.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: the loader's NUL-terminated name, copied at once.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.to_bytes()),
    ))
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether this call is the program's first initialisation, which the
/// plugin's stands for.
fn answered_here() -> bool {
    STANDING_IN.load(Ordering::Acquire) && PROGRAM_INITS.fetch_add(1, Ordering::AcqRel) == 0
}

/// Stands in for `MPI_Init`.
unsafe extern "C" fn wrapped_init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let answer = std::panic::catch_unwind(|| {
        if answered_here() {
            return crate::mpi::SUCCESS;
        }
        let real = REAL_INIT.load(Ordering::Acquire);
        if real == 0 {
            return ERR_OTHER.load(Ordering::Acquire);
        }
        // SAFETY: the library's MPI_Init (stored by `install`), called
        // with the program's own arguments.
        let real: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int =
            unsafe { std::mem::transmute(real) };
        // SAFETY: as above.
        unsafe { real(argc, argv) }
    });
    answer.unwrap_or_else(|_| ERR_OTHER.load(Ordering::Acquire))
}

/// Stands in for `MPI_Init_thread`.
unsafe extern "C" fn wrapped_init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let answer = std::panic::catch_unwind(|| {
        if answered_here() {
            if !provided.is_null() {
                // SAFETY: the program's out-parameter, non-null.
                unsafe { *provided = PROVIDED.load(Ordering::Acquire) };
            }
            return crate::mpi::SUCCESS;
        }
        let real = REAL_INIT_THREAD.load(Ordering::Acquire);
        if real == 0 {
            return ERR_OTHER.load(Ordering::Acquire);
        }
        // SAFETY: the library's MPI_Init_thread (stored by `install`),
        // called with the program's own arguments.
        let real: unsafe extern "C" fn(
            *mut c_int,
            *mut *mut *mut c_char,
            c_int,
            *mut c_int,
        ) -> c_int = unsafe { std::mem::transmute(real) };
        // SAFETY: as above.
        unsafe { real(argc, argv, required, provided) }
    });
    answer.unwrap_or_else(|_| ERR_OTHER.load(Ordering::Acquire))
}
