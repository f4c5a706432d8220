//! Which family's library a process opens, decided before any is opened.
//!
//! The rule, first that answers:
//!
//! 1. `OMPTARGET_MPI_FAMILY=openmpi|mpich` (case and surrounding blanks
//!    ignored; `open-mpi` and `ompi` also name Open MPI): the user says
//!    (any other value is an error, not a guess).
//! 2. A family's library already loaded in the process (a program linked
//!    with `libmpi.so.40` or `libmpich.so.12`): that one, since two MPI
//!    libraries in one process cannot both work.
//! 3. The launcher's environment: Open MPI's `mpirun` sets
//!    `OMPI_COMM_WORLD_RANK`; MPICH's Hydra (`mpiexec.hydra`) sets
//!    `PMI_RANK` (with `PMI_FD` or `PMI_PORT`) and no `OMPI_*`.
//! 4. Otherwise each family in turn ([`Family::ALL`]: Open MPI, then
//!    MPICH), the first whose library opens.
use std::ffi::c_int;

/// Which ABI family a library is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Open MPI 4 or 5 (`libmpi.so.40`).
    OpenMpi,
    /// MPICH 3 or 4, or a derivative keeping its ABI (`libmpich.so.12`).
    Mpich,
}

/// The values of `mpi.h` that differ between the families (those that do
/// not, `MPI_SUCCESS` and `MPI_THREAD_MULTIPLE`, are [`super::SUCCESS`]
/// and [`super::THREAD_MULTIPLE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Constants {
    /// The library's soname.
    pub library: &'static str,
    /// `MPI_ANY_SOURCE`.
    pub any_source: c_int,
    /// `MPI_KEYVAL_INVALID`.
    pub keyval_invalid: c_int,
    /// `MPI_TAG_UB`: the predefined attribute keyval of the largest tag.
    pub tag_ub: c_int,
    /// `MPI_MAX_PROCESSOR_NAME`.
    pub max_processor_name: usize,
    /// `MPI_MAX_ERROR_STRING`.
    pub max_error_string: usize,
    /// `MPI_ERR_OTHER`.
    pub err_other: c_int,
}

impl Family {
    /// Both, in the order they are tried when nothing says which.
    pub const ALL: [Family; 2] = [Family::OpenMpi, Family::Mpich];

    /// Its constants (from its `mpi.h`; `tests/remote/abi.rs` checks them
    /// against the installed headers).
    pub const fn constants(self) -> Constants {
        match self {
            Family::OpenMpi => Constants {
                library: "libmpi.so.40",
                any_source: -1,
                keyval_invalid: -1,
                tag_ub: 0,
                max_processor_name: 256,
                max_error_string: 256,
                err_other: 16,
            },
            Family::Mpich => Constants {
                library: "libmpich.so.12",
                any_source: -2,
                keyval_invalid: 0x2400_0000,
                tag_ub: 0x6440_0001,
                max_processor_name: 128,
                max_error_string: 512,
                err_other: 15,
            },
        }
    }

    /// Its name, for messages.
    pub const fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where [`choose`] looks, as data (testable).
pub struct Clues<'a> {
    /// The environment.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// Whether `soname` is already loaded in the process.
    pub loaded: &'a dyn Fn(&str) -> bool,
}

/// `OMPTARGET_MPI_FAMILY` holds neither family's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("OMPTARGET_MPI_FAMILY={0:?}: expected openmpi or mpich")]
pub struct UnknownFamily(pub String);

/// What [`choose`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// This family, for the reason given.
    Family(Family, Reason),
    /// Nothing says: try each.
    Either,
}

/// Why a family was chosen (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// `OMPTARGET_MPI_FAMILY`.
    Asked,
    /// Its library was loaded already.
    Loaded,
    /// Its launcher's environment.
    Launcher,
}

impl Family {
    /// The family `OMPTARGET_MPI_FAMILY` names (`openmpi`, `mpich`).
    pub fn parse(name: &str) -> Result<Family, UnknownFamily> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openmpi" | "open-mpi" | "ompi" => Ok(Family::OpenMpi),
            "mpich" => Ok(Family::Mpich),
            _ => Err(UnknownFamily(name.to_owned())),
        }
    }
}

/// Apply the rule of this module to `clues`.
pub fn choose(clues: &Clues<'_>) -> Result<Choice, UnknownFamily> {
    if let Some(name) = (clues.var)("OMPTARGET_MPI_FAMILY") {
        return Ok(Choice::Family(Family::parse(&name)?, Reason::Asked));
    }
    if let Some(family) = Family::ALL
        .into_iter()
        .find(|f| (clues.loaded)(f.constants().library))
    {
        return Ok(Choice::Family(family, Reason::Loaded));
    }
    if (clues.var)("OMPI_COMM_WORLD_RANK").is_some() {
        return Ok(Choice::Family(Family::OpenMpi, Reason::Launcher));
    }
    let hydra = (clues.var)("PMI_RANK").is_some()
        && ((clues.var)("PMI_FD").is_some() || (clues.var)("PMI_PORT").is_some());
    if hydra {
        return Ok(Choice::Family(Family::Mpich, Reason::Launcher));
    }
    Ok(Choice::Either)
}

/// Whether `soname` is loaded in this process (`RTLD_NOLOAD`: never
/// loads it).
pub fn loaded(soname: &str) -> bool {
    // SAFETY: RTLD_NOLOAD opens nothing new, so no constructor runs; the
    // handle of an already loaded library is closed again at once.
    unsafe {
        libloading::os::unix::Library::open(
            Some(soname),
            libloading::os::unix::RTLD_NOW | RTLD_NOLOAD,
        )
    }
    .is_ok()
}

/// `RTLD_NOLOAD` (glibc's `<dlfcn.h>`; libloading does not export it).
const RTLD_NOLOAD: std::ffi::c_int = 0x0004;

#[cfg(test)]
mod tests {
    use super::*;

    fn choose_in(vars: &[(&str, &str)], loaded: &[&str]) -> Result<Choice, UnknownFamily> {
        let var = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        let is_loaded = |soname: &str| loaded.contains(&soname);
        choose(&Clues {
            var: &var,
            loaded: &is_loaded,
        })
    }

    #[test]
    fn the_launcher_environment_names_the_family() {
        use Choice::Family as F;
        assert_eq!(
            choose_in(&[("OMPI_COMM_WORLD_RANK", "0")], &[]),
            Ok(F(Family::OpenMpi, Reason::Launcher))
        );
        // What mpiexec.hydra (MPICH 4.0) sets: PMI_RANK, PMI_SIZE, PMI_FD.
        assert_eq!(
            choose_in(
                &[("PMI_RANK", "1"), ("PMI_SIZE", "2"), ("PMI_FD", "6")],
                &[]
            ),
            Ok(F(Family::Mpich, Reason::Launcher))
        );
        assert_eq!(
            choose_in(&[("PMI_RANK", "1"), ("PMI_PORT", "host:4242")], &[]),
            Ok(F(Family::Mpich, Reason::Launcher))
        );
        // PMI_RANK alone (another PMI's) is not Hydra's.
        assert_eq!(choose_in(&[("PMI_RANK", "1")], &[]), Ok(Choice::Either));
        assert_eq!(choose_in(&[], &[]), Ok(Choice::Either));
    }

    #[test]
    fn a_loaded_library_wins_over_the_environment_and_the_user_over_both() {
        use Choice::Family as F;
        assert_eq!(
            choose_in(&[("OMPI_COMM_WORLD_RANK", "0")], &["libmpich.so.12"]),
            Ok(F(Family::Mpich, Reason::Loaded))
        );
        assert_eq!(
            choose_in(
                &[
                    ("OMPTARGET_MPI_FAMILY", "openmpi"),
                    ("PMI_RANK", "0"),
                    ("PMI_FD", "3")
                ],
                &["libmpich.so.12"]
            ),
            Ok(F(Family::OpenMpi, Reason::Asked))
        );
        assert_eq!(
            choose_in(&[("OMPTARGET_MPI_FAMILY", "MPICH")], &[]),
            Ok(F(Family::Mpich, Reason::Asked))
        );
        assert_eq!(
            choose_in(&[("OMPTARGET_MPI_FAMILY", "lam")], &[]),
            Err(UnknownFamily("lam".into()))
        );
    }

    #[test]
    fn no_library_is_loaded_by_asking() {
        assert!(!loaded("libomptarget-no-such-library.so.0"));
        assert!(loaded("libc.so.6"));
    }
}
