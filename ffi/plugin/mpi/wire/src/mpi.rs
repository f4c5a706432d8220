//! A thin binding of the MPI calls this plugin and its device server use,
//! over Open MPI's `libmpi.so.40`, opened at run time.
//!
//! Why not the `mpi` crate (rsmpi): it links `libmpi` into whatever uses
//! it. This plugin is loaded by every offload program, most of which never
//! run under `mpirun`; linking Open MPI would load it, its components and
//! its global constructors and destructors into all of them, and put its
//! allocations in every valgrind run. Like the CUDA plugin's driver (cudarc
//! with `dynamic-loading`), the library is opened only when the process was
//! started by an MPI launcher, and closed by `deinit_plugin`. rsmpi also
//! needs bindgen and libclang at build time.
//!
//! The price is the ABI: `mpi.h` is not an ABI standard (MPI 5's ABI is not
//! yet shipped), so the handles below are Open MPI's: a communicator,
//! datatype or request is a pointer, the predefined handles are the
//! addresses of `ompi_mpi_*` globals, and `MPI_Status` is three `int`s
//! followed by Open MPI's private fields (24 bytes). The test
//! `tests/remote/abi.rs` compiles a C program with `mpicc` and checks the
//! constants, `MPI_Status`'s layout, the handles' size and
//! `MPI_COMM_WORLD`'s address against the installed `mpi.h`, and that
//! every function and handle resolves.
use crate::error::MpiError;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void};

/// `MPI_Comm` (Open MPI: `struct ompi_communicator_t *`).
pub type Comm = *mut c_void;
/// `MPI_Datatype`.
pub type Datatype = *mut c_void;
/// `MPI_Request`.
pub type Request = *mut c_void;
/// `MPI_Errhandler`.
pub type Errhandler = *mut c_void;

/// `MPI_SUCCESS`.
pub const SUCCESS: c_int = 0;
/// `MPI_THREAD_MULTIPLE`.
pub const THREAD_MULTIPLE: c_int = 3;
/// `MPI_ANY_SOURCE`.
pub const ANY_SOURCE: c_int = -1;
/// `MPI_MAX_PROCESSOR_NAME`.
pub const MAX_PROCESSOR_NAME: usize = 256;
/// `MPI_KEYVAL_INVALID`.
pub const KEYVAL_INVALID: c_int = -1;
/// `MPI_TAG_UB`: the predefined attribute keyval of the largest tag.
pub const TAG_UB: c_int = 0;
/// The soname opened (Open MPI 4 and 5 keep it).
pub const LIBRARY: &str = "libmpi.so.40";

/// `MPI_Status` as Open MPI lays it out.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    cancelled: c_int,
    ucount: usize,
}

/// `MPI_Comm_delete_attr_function`.
pub type DeleteAttrFn = unsafe extern "C" fn(
    comm: Comm,
    keyval: c_int,
    value: *mut c_void,
    extra: *mut c_void,
) -> c_int;

macro_rules! mpi_functions {
    ($($field:ident = $symbol:literal : fn($($arg:ty),*);)*) => {
        /// The MPI functions, resolved once when the library is opened.
        #[allow(missing_docs)]
        pub struct Functions {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> c_int,)*
        }

        impl Functions {
            /// # Safety
            /// `library` is Open MPI's `libmpi`: every symbol has the
            /// signature of its declaration in `mpi.h`.
            unsafe fn resolve(library: &Library) -> Result<Self, MpiError> {
                Ok(Functions {
                    $($field: {
                        // SAFETY: per this function's contract.
                        let symbol = unsafe {
                            library.get::<unsafe extern "C" fn($($arg),*) -> c_int>(
                                concat!($symbol, "\0").as_bytes(),
                            )
                        };
                        *symbol.map_err(|source| MpiError::Missing { symbol: $symbol, source })?
                    },)*
                })
            }
        }
    };
}

mpi_functions! {
    initialized = "MPI_Initialized": fn(*mut c_int);
    finalized = "MPI_Finalized": fn(*mut c_int);
    init_thread = "MPI_Init_thread": fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int);
    query_thread = "MPI_Query_thread": fn(*mut c_int);
    finalize = "MPI_Finalize": fn();
    abort = "MPI_Abort": fn(Comm, c_int);
    comm_dup = "MPI_Comm_dup": fn(Comm, *mut Comm);
    comm_free = "MPI_Comm_free": fn(*mut Comm);
    comm_rank = "MPI_Comm_rank": fn(Comm, *mut c_int);
    comm_size = "MPI_Comm_size": fn(Comm, *mut c_int);
    comm_set_errhandler = "MPI_Comm_set_errhandler": fn(Comm, Errhandler);
    comm_create_keyval = "MPI_Comm_create_keyval": fn(*mut c_void, *mut c_void, *mut c_int, *mut c_void);
    comm_free_keyval = "MPI_Comm_free_keyval": fn(*mut c_int);
    comm_set_attr = "MPI_Comm_set_attr": fn(Comm, c_int, *mut c_void);
    comm_delete_attr = "MPI_Comm_delete_attr": fn(Comm, c_int);
    comm_get_attr = "MPI_Comm_get_attr": fn(Comm, c_int, *mut c_void, *mut c_int);
    allgather = "MPI_Allgather": fn(*const c_void, c_int, Datatype, *mut c_void, c_int, Datatype, Comm);
    send = "MPI_Send": fn(*const c_void, c_int, Datatype, c_int, c_int, Comm);
    recv = "MPI_Recv": fn(*mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Status);
    isend = "MPI_Isend": fn(*const c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request);
    irecv = "MPI_Irecv": fn(*mut c_void, c_int, Datatype, c_int, c_int, Comm, *mut Request);
    test = "MPI_Test": fn(*mut Request, *mut c_int, *mut Status);
    wait = "MPI_Wait": fn(*mut Request, *mut Status);
    get_count = "MPI_Get_count": fn(*const Status, Datatype, *mut c_int);
    cancel = "MPI_Cancel": fn(*mut Request);
    test_cancelled = "MPI_Test_cancelled": fn(*const Status, *mut c_int);
    request_free = "MPI_Request_free": fn(*mut Request);
    get_processor_name = "MPI_Get_processor_name": fn(*mut c_char, *mut c_int);
    error_string = "MPI_Error_string": fn(c_int, *mut c_char, *mut c_int);
}

/// The opened library: its functions and predefined handles. Dropping it
/// closes the library only when MPI never started in the process.
pub struct Mpi {
    /// The functions.
    pub f: Functions,
    /// `MPI_COMM_WORLD`.
    pub comm_world: Comm,
    /// `MPI_COMM_SELF`.
    pub comm_self: Comm,
    /// `MPI_BYTE`.
    pub byte: Datatype,
    /// `MPI_INT`.
    pub int: Datatype,
    /// `MPI_ERRORS_RETURN`.
    pub errors_return: Errhandler,
    /// `MPI_COMM_NULL_COPY_FN` (a function of Open MPI's).
    pub comm_null_copy_fn: *mut c_void,
    /// `None` once given up to stay loaded ([`Drop for Mpi`](#impl-Drop-for-Mpi)).
    library: Option<Library>,
}

impl Drop for Mpi {
    /// Close the library only if MPI never started in this process. Once
    /// it did, Open MPI stays loaded for the rest of the process: MPI
    /// cannot start again after `MPI_Finalize` anyway, Open MPI's own
    /// components and exit-time hooks point into it, and a leak checker
    /// can still name its frames (valgrind reports what Open MPI keeps
    /// from its initialisation under `libmpi.so.40`, where a suppression
    /// can find it).
    fn drop(&mut self) {
        let mut started: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time, finalised too.
        unsafe { (self.f.initialized)(&mut started) };
        if started != 0 {
            if let Some(library) = self.library.take() {
                // Stays mapped: the handle is dropped without dlclose.
                std::mem::forget(library);
            }
        }
    }
}

// SAFETY: the handles are addresses of Open MPI's predefined objects,
// valid from any thread; the library is initialised with
// MPI_THREAD_MULTIPLE before any call from a second thread (checked).
unsafe impl Send for Mpi {}
// SAFETY: as for Send: MPI_THREAD_MULTIPLE makes every call thread-safe.
unsafe impl Sync for Mpi {}

impl Mpi {
    /// Open `libmpi.so.40` and resolve what this crate calls.
    ///
    /// It is opened `RTLD_GLOBAL`: Open MPI 4 dlopens its components
    /// (`mca_*.so`), which resolve `libmpi`'s symbols globally.
    pub fn open() -> Result<Mpi, MpiError> {
        // SAFETY: opening libmpi runs its constructors, which have no
        // preconditions; nothing else runs.
        let library = unsafe {
            libloading::os::unix::Library::open(
                Some(LIBRARY),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        }
        .map_err(|source| MpiError::Open {
            library: LIBRARY,
            source,
        })?;
        let library = Library::from(library);
        let handle = |symbol: &'static str| -> Result<*mut c_void, MpiError> {
            // SAFETY: the symbol is a global object; only its address is taken.
            unsafe { library.get::<*mut c_void>(symbol.as_bytes()) }
                .map(|s| *s)
                .map_err(|source| MpiError::NotOpenMpi {
                    library: LIBRARY,
                    symbol,
                    source,
                })
        };
        let comm_world = handle("ompi_mpi_comm_world")?;
        let comm_self = handle("ompi_mpi_comm_self")?;
        let byte = handle("ompi_mpi_byte")?;
        let int = handle("ompi_mpi_int")?;
        let errors_return = handle("ompi_mpi_errors_return")?;
        let comm_null_copy_fn = handle("OMPI_C_MPI_COMM_NULL_COPY_FN")?;
        // SAFETY: the library is Open MPI's (its predefined objects exist).
        let f = unsafe { Functions::resolve(&library)? };
        Ok(Mpi {
            f,
            comm_world,
            comm_self,
            byte,
            int,
            errors_return,
            comm_null_copy_fn,
            library: Some(library),
        })
    }

    /// `Err` with MPI's own description of `code` unless it is success.
    /// Inlined: every poll of every wait checks a code.
    #[inline]
    pub fn check(&self, what: &'static str, code: c_int) -> Result<(), MpiError> {
        if code == SUCCESS {
            return Ok(());
        }
        Err(self.describe_error(what, code))
    }

    /// `what` failed with `code`, and MPI's description of it.
    #[cold]
    #[inline(never)]
    fn describe_error(&self, what: &'static str, code: c_int) -> MpiError {
        let mut text = [0 as c_char; 512];
        let mut len: c_int = 0;
        // SAFETY: `text` holds MPI_MAX_ERROR_STRING (256) characters.
        let described = unsafe { (self.f.error_string)(code, text.as_mut_ptr(), &mut len) };
        let detail = if described == SUCCESS {
            let bytes: Vec<u8> = text[..len.clamp(0, 511) as usize]
                .iter()
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            format!("error {code}")
        };
        MpiError::Call {
            call: what,
            code,
            text: detail,
        }
    }

    /// This host's name (`MPI_Get_processor_name`).
    pub fn processor_name(&self) -> String {
        let mut name = [0 as c_char; MAX_PROCESSOR_NAME + 1];
        let mut len: c_int = 0;
        // SAFETY: `name` holds MPI_MAX_PROCESSOR_NAME characters.
        let code = unsafe { (self.f.get_processor_name)(name.as_mut_ptr(), &mut len) };
        if code != SUCCESS {
            return "?".into();
        }
        let bytes: Vec<u8> = name[..len.clamp(0, MAX_PROCESSOR_NAME as c_int) as usize]
            .iter()
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Whether this process is part of a job that may hold device servers:
/// only then is `libmpi` opened at all, and MPI initialised.
///
/// Servers run as an application context of their own (`mpirun -np 1
/// ./app : -np N omptarget-mpi-device`), so Open MPI tells each process
/// there is more than one (`OMPI_NUM_APP_CTX`). A plain MPI job (`mpirun
/// -np 4 ./app`) is left alone: the plugin must not initialise (let alone
/// finalise) the MPI of a program that starts it itself in `main`.
/// `OMPTARGET_MPI=1` says yes for a launcher that sets no such variable;
/// `OMPTARGET_MPI_DISABLE` says no.
pub fn job_may_have_servers() -> bool {
    job_may_have_servers_by(|name| std::env::var(name).ok())
}

/// [`job_may_have_servers`] over `var` (testable).
pub fn job_may_have_servers_by(var: impl Fn(&str) -> Option<String>) -> bool {
    if var("OMPTARGET_MPI_DISABLE").is_some() {
        return false;
    }
    if var("OMPTARGET_MPI").is_some_and(|v| v == "1") {
        return true;
    }
    var("OMPI_NUM_APP_CTX")
        .and_then(|n| n.trim().parse::<u32>().ok())
        .is_some_and(|n| n > 1)
}

#[cfg(test)]
mod tests {
    use super::job_may_have_servers_by;

    fn job(vars: &[(&str, &str)]) -> bool {
        job_may_have_servers_by(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn only_a_job_of_several_contexts_may_have_servers() {
        assert!(!job(&[]), "no launcher");
        assert!(!job(&[
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_NUM_APP_CTX", "1")
        ]));
        assert!(job(&[
            ("OMPI_COMM_WORLD_SIZE", "3"),
            ("OMPI_NUM_APP_CTX", "2")
        ]));
        assert!(job(&[("OMPTARGET_MPI", "1")]));
        assert!(!job(&[
            ("OMPI_NUM_APP_CTX", "2"),
            ("OMPTARGET_MPI_DISABLE", "1")
        ]));
        assert!(!job(&[("OMPI_NUM_APP_CTX", "two")]));
    }
}
