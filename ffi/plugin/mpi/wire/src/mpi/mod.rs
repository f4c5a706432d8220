//! A thin binding of the MPI calls this plugin and its device server use,
//! over the MPI library of the job, opened at run time: Open MPI's
//! `libmpi.so.40` or MPICH's `libmpich.so.12` ([`family`] says which).
//!
//! Why not the `mpi` crate (rsmpi): it links `libmpi` into whatever uses
//! it. This plugin is loaded by every offload program, most of which never
//! run under `mpirun`; linking an MPI would load it, its components and
//! its global constructors and destructors into all of them, and put its
//! allocations in every valgrind run. Like the CUDA plugin's driver (cudarc
//! with `dynamic-loading`), the library is opened only when the process was
//! started by an MPI launcher, and closed by `deinit_plugin`. rsmpi also
//! needs bindgen and libclang at build time, and fixes one MPI at build
//! time.
//!
//! The price is the ABI: `mpi.h` is not an ABI standard, so each family's
//! handles and `MPI_Status` are described as types in [`abi`], and the
//! functions are resolved with the chosen family's types
//! ([`functions::Functions`]). Callers see one [`Handle`] and one decoded
//! [`Status`] whatever the family. The test `tests/remote/abi.rs` compiles
//! a C program with each family's `mpicc` and checks the constants,
//! `MPI_Status`'s layout, the handles' size and values against its
//! `mpi.h`, and that every function and handle resolves.
use abi::{Abi, Predefined};
use error::MpiError;
use functions::Functions;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void};

pub mod abi;
pub mod error;
pub mod family;
pub mod functions;

pub use abi::{Mpich, OpenMpi, Status};
pub use calls::InitEntries;
pub use family::{Constants, Family};

/// An MPI handle (`MPI_Comm`, `MPI_Datatype`, `MPI_Request`,
/// `MPI_Errhandler`) whatever the family: an Open MPI pointer or an MPICH
/// `int`, as its bits ([`Abi::handle`], [`Abi::raw`] convert).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub usize);

/// `MPI_SUCCESS` (both families).
pub const SUCCESS: c_int = 0;
/// `MPI_THREAD_MULTIPLE` (both families).
pub const THREAD_MULTIPLE: c_int = 3;
/// The longest processor name of either family (`MPI_MAX_PROCESSOR_NAME`:
/// Open MPI 256, MPICH 128): the size of a name in a peer record.
pub const MAX_PROCESSOR_NAME: usize = 256;

/// An `MPI_Comm_delete_attr_function` in both representations: the
/// library calls the one of its family. Make both from one generic
/// function (`DeleteAttr { pointer: f::<*mut c_void>, int: f::<c_int> }`).
#[derive(Clone, Copy)]
pub struct DeleteAttr {
    /// Open MPI's (`MPI_Comm` a pointer).
    pub pointer: unsafe extern "C" fn(*mut c_void, c_int, *mut c_void, *mut c_void) -> c_int,
    /// MPICH's (`MPI_Comm` an `int`).
    pub int: unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_void) -> c_int,
}

/// The functions, with the opened family's types.
enum Binding {
    OpenMpi(Functions<OpenMpi>),
    Mpich(Functions<Mpich>),
}

/// Run `$body` with `$f` the functions and `$A` the family's [`Abi`]:
/// the one place the binding looks at which family it has.
macro_rules! dispatch {
    ($self:expr, $f:ident => $body:expr) => {
        match &$self.binding {
            Binding::OpenMpi($f) => $body,
            Binding::Mpich($f) => $body,
        }
    };
    ($self:expr, $f:ident, $A:ident => $body:expr) => {
        match &$self.binding {
            Binding::OpenMpi($f) => {
                type $A = OpenMpi;
                $body
            }
            Binding::Mpich($f) => {
                type $A = Mpich;
                $body
            }
        }
    };
}

mod calls;

/// The opened library: its functions and predefined handles. Dropping it
/// closes the library only when MPI never started in the process.
pub struct Mpi {
    binding: Binding,
    /// The family of the library.
    pub family: Family,
    /// Its constants.
    pub constants: Constants,
    /// Its predefined handles.
    pub predefined: Predefined,
    /// `None` once given up to stay loaded ([`Drop for Mpi`](#impl-Drop-for-Mpi)).
    library: Option<Library>,
}

impl Drop for Mpi {
    /// Close the library only if MPI never started in this process. Once
    /// it did, the library stays loaded for the rest of the process: MPI
    /// cannot start again after `MPI_Finalize` anyway, Open MPI's own
    /// components and exit-time hooks point into it, and a leak checker
    /// can still name its frames (valgrind reports what Open MPI keeps
    /// from its initialisation under `libmpi.so.40`, where a suppression
    /// can find it).
    fn drop(&mut self) {
        let mut started: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time, finalised too.
        unsafe { self.initialized(&mut started) };
        if started != 0 {
            if let Some(library) = self.library.take() {
                // Stays mapped: the handle is dropped without dlclose.
                std::mem::forget(library);
            }
        }
    }
}

// SAFETY: the handles are addresses of Open MPI's predefined objects or
// MPICH's constants, valid from any thread; the library is initialised
// with MPI_THREAD_MULTIPLE before any call from a second thread (checked).
unsafe impl Send for Mpi {}
// SAFETY: as for Send: MPI_THREAD_MULTIPLE makes every call thread-safe.
unsafe impl Sync for Mpi {}

impl Mpi {
    /// Open the library of the family [`family::choose`] picks from this
    /// process (or, when nothing says, the first that opens), and resolve
    /// what this crate calls.
    pub fn open() -> Result<Mpi, MpiError> {
        let var = |name: &str| std::env::var(name).ok();
        let choice = family::choose(&family::Clues {
            var: &var,
            loaded: &family::loaded,
        })?;
        match choice {
            family::Choice::Family(family, reason) => {
                tracing::debug!("MPI: {family} ({reason:?})");
                Mpi::open_family(family)
            }
            family::Choice::Either => {
                let mut tried = Vec::new();
                for family in Family::ALL {
                    match Mpi::open_family(family) {
                        Err(MpiError::Open {
                            library, source, ..
                        }) => tried.push((library, source)),
                        opened => return opened,
                    }
                }
                Err(MpiError::NoLibrary { tried })
            }
        }
    }

    /// Open `family`'s library and resolve what this crate calls.
    ///
    /// It is opened `RTLD_GLOBAL`: Open MPI 4 dlopens its components
    /// (`mca_*.so`), which resolve `libmpi`'s symbols globally.
    pub fn open_family(family: Family) -> Result<Mpi, MpiError> {
        let constants = family.constants();
        // SAFETY: opening the library runs its constructors, which have no
        // preconditions; nothing else runs.
        let library = unsafe {
            libloading::os::unix::Library::open(
                Some(constants.library),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
            )
        }
        .map_err(|source| MpiError::Open {
            library: constants.library,
            family,
            source,
        })?;
        let library = Library::from(library);
        let (binding, predefined) = match family {
            Family::OpenMpi => (
                // SAFETY: the library is Open MPI's (its soname).
                Binding::OpenMpi(unsafe { Functions::resolve(&library)? }),
                OpenMpi::predefined(&library)?,
            ),
            Family::Mpich => (
                // SAFETY: the library is MPICH's (its soname).
                Binding::Mpich(unsafe { Functions::resolve(&library)? }),
                Mpich::predefined(&library)?,
            ),
        };
        Ok(Mpi {
            binding,
            family,
            constants,
            predefined,
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
        let mut text = vec![0 as c_char; self.constants.max_error_string + 1];
        let mut len: c_int = 0;
        // SAFETY: `text` holds MPI_MAX_ERROR_STRING characters.
        let described = unsafe { self.error_string(code, text.as_mut_ptr(), &mut len) };
        let detail = if described == SUCCESS {
            let bytes: Vec<u8> = text[..(len.max(0) as usize).min(text.len() - 1)]
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
        let max = self.constants.max_processor_name;
        let mut name = vec![0 as c_char; max + 1];
        let mut len: c_int = 0;
        // SAFETY: `name` holds MPI_MAX_PROCESSOR_NAME characters.
        let code = unsafe { self.get_processor_name(name.as_mut_ptr(), &mut len) };
        if code != SUCCESS {
            return "?".into();
        }
        let bytes: Vec<u8> = name[..(len.max(0) as usize).min(max)]
            .iter()
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Whether `request` is `MPI_REQUEST_NULL` (completed or freed).
    pub fn is_request_null(&self, request: Handle) -> bool {
        request == self.predefined.request_null
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
/// `OMPTARGET_MPI=1` says yes for a launcher that sets no such variable
/// (MPICH's Hydra sets only `PMI_RANK`, `PMI_SIZE`, `PMI_FD`, the same in
/// every context, checked with `mpiexec.hydra -n 1 env : -n 1 env`);
/// `OMPTARGET_MPI_SPAWN=N` says yes too: each program rank then starts
/// N servers of its own with `MPI_Comm_spawn`, in any job or none
/// (`mpirun -np 4 ./app`, or `./app` alone), and they are not members of
/// the program's `MPI_COMM_WORLD`. `OMPTARGET_MPI_DISABLE` says no.
pub fn job_may_have_servers() -> bool {
    job_may_have_servers_by(|name| std::env::var(name).ok())
}

/// [`job_may_have_servers`] over `var` (testable).
pub fn job_may_have_servers_by(var: impl Fn(&str) -> Option<String>) -> bool {
    if var("OMPTARGET_MPI_DISABLE").is_some() {
        return false;
    }
    if var("OMPTARGET_MPI").is_some_and(|v| v == "1") || var(SPAWN_VAR).is_some() {
        return true;
    }
    job_of_several_contexts_by(var)
}

/// Whether Open MPI says this job has several application contexts
/// (`OMPI_NUM_APP_CTX` > 1): servers started beside the program (MPMD).
pub fn job_of_several_contexts_by(var: impl Fn(&str) -> Option<String>) -> bool {
    var("OMPI_NUM_APP_CTX")
        .and_then(|n| n.trim().parse::<u32>().ok())
        .is_some_and(|n| n > 1)
}

/// The variable that asks each program rank to spawn its own servers.
pub const SPAWN_VAR: &str = "OMPTARGET_MPI_SPAWN";

/// `OMPTARGET_MPI_SPAWN` is not a count of servers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{SPAWN_VAR}={value:?}: expected the number of device servers to spawn, 1 to {MAX_SPAWN}")]
pub struct BadSpawnCount {
    /// What it says.
    pub value: String,
}

/// The most servers one program rank spawns: far above any machine's
/// cores, so a typo (`OMPTARGET_MPI_SPAWN=20000`) is refused before MPI
/// tries to start that many processes.
pub const MAX_SPAWN: u32 = 4096;

/// How many servers this program rank spawns: `Ok(None)` when
/// `OMPTARGET_MPI_SPAWN` is not set (or `OMPTARGET_MPI_DISABLE` is).
pub fn spawn_count_by(var: impl Fn(&str) -> Option<String>) -> Result<Option<u32>, BadSpawnCount> {
    if var("OMPTARGET_MPI_DISABLE").is_some() {
        return Ok(None);
    }
    let Some(value) = var(SPAWN_VAR) else {
        return Ok(None);
    };
    match value.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_SPAWN).contains(&n) => Ok(Some(n)),
        _ => Err(BadSpawnCount { value }),
    }
}

#[cfg(test)]
mod tests {
    use super::{job_may_have_servers_by, spawn_count_by, BadSpawnCount};

    fn vars<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn a_spawn_count_is_a_number_of_servers() {
        assert_eq!(spawn_count_by(vars(&[])), Ok(None));
        assert_eq!(
            spawn_count_by(vars(&[("OMPTARGET_MPI_SPAWN", "2")])),
            Ok(Some(2))
        );
        assert_eq!(
            spawn_count_by(vars(&[("OMPTARGET_MPI_SPAWN", " 3 ")])),
            Ok(Some(3))
        );
        for bad in ["0", "-1", "two", "", "4097"] {
            assert_eq!(
                spawn_count_by(vars(&[("OMPTARGET_MPI_SPAWN", bad)])),
                Err(BadSpawnCount { value: bad.into() }),
                "{bad:?}"
            );
        }
        assert_eq!(
            spawn_count_by(vars(&[
                ("OMPTARGET_MPI_SPAWN", "2"),
                ("OMPTARGET_MPI_DISABLE", "1")
            ])),
            Ok(None)
        );
        assert!(job_may_have_servers_by(vars(&[(
            "OMPTARGET_MPI_SPAWN",
            "2"
        )])));
        assert!(!job_may_have_servers_by(vars(&[
            ("OMPTARGET_MPI_SPAWN", "2"),
            ("OMPTARGET_MPI_DISABLE", "1")
        ])));
    }

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
