//! [`MpiError`]: why the MPI library could not be used, or one of its
//! calls failed. The binding's own error, below the wire's
//! (`crate::error`, which re-exports it).

use std::ffi::c_int;

/// Why the MPI library could not be used, or one of its calls failed:
/// nothing of ours is in MPI's hands for it.
#[derive(Debug, thiserror::Error)]
pub enum MpiError {
    /// The chosen family's library could not be opened.
    #[error("cannot open {library} ({family}): {source}")]
    Open {
        /// The soname.
        library: &'static str,
        /// Its family.
        family: super::Family,
        /// The loader's error.
        source: libloading::Error,
    },
    /// Nothing said which family, and no family's library opened.
    #[error("no MPI library opens: {}", tried.iter().map(|(library, err)| format!("{library}: {err}")).collect::<Vec<_>>().join("; "))]
    NoLibrary {
        /// Each soname tried, and why it did not open.
        tried: Vec<(&'static str, libloading::Error)>,
    },
    /// `OMPTARGET_MPI_FAMILY` names no family.
    #[error(transparent)]
    UnknownFamily(#[from] super::family::UnknownFamily),
    /// A predefined handle is missing: the library is not of the family
    /// its soname says.
    #[error("{library} is not {family}'s ({symbol}: {source})")]
    NotOfFamily {
        /// The soname.
        library: &'static str,
        /// The family it was opened as.
        family: super::Family,
        /// The missing object.
        symbol: &'static str,
        /// The loader's error.
        source: libloading::Error,
    },
    /// A function of the binding is missing.
    #[error("{symbol}: {source}")]
    Missing {
        /// The missing function.
        symbol: &'static str,
        /// The loader's error.
        source: libloading::Error,
    },
    /// A call returned `code`: `text` is MPI's description of it.
    #[error("{call}: {text}")]
    Call {
        /// The function (and what it was for).
        call: &'static str,
        /// Its return code.
        code: c_int,
        /// `MPI_Error_string` of the code.
        text: String,
    },
}
